import os
from pathlib import Path

import pytest
import torch

from loopfix.models import CACHE_DIR_VARIABLE, resolve_model_path

# Rich wraps console output at the terminal's width (80 when there is none), so a message that
# holds a temporary path would break at a place that moves with the path's length. Tests read
# CLI output unwrapped; layout at a given width is tested with an explicit width.
os.environ["COLUMNS"] = "1000"

# The models under test are tiny: one thread is as fast as two on a quiet machine and many times
# faster when the two CI cores are shared (oversubscribed torch threads spin against each other).
torch.set_num_threads(1)
# The same for the commands tests start (`loopfix doctor`, ...): the suite runs on two workers
# (pyproject's `-n 2`), so a second thread per process would only contend for the other's core.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# GGUF conversions (the real model, loopfix:smollm2) go to one folder under the checkout that git
# ignores: a clean clone converts once, later runs reuse it, and tests never write into the
# user's ~/.cache. Tests of the cache itself point this variable elsewhere with monkeypatch.
os.environ[CACHE_DIR_VARIABLE] = str(Path(__file__).resolve().parents[1] / ".cache" / "loopfix")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules that hold a slow test run first. The two workers take whole modules in
    collection order (`--dist loadscope`), and the slowest modules are top-level files that sort
    last (test_readme, test_smollm2, ...): one worker then ran them alone at the end while the
    other had nothing left."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)


@pytest.fixture(scope="session")
def smollm2_folder() -> Path:
    """The real model's converted folder (converted on the first use in a clean checkout)."""
    return Path(resolve_model_path("loopfix:smollm2"))


@pytest.fixture(scope="session")
def gemma3_folder() -> Path:
    """The second real model's converted folder (Gemma 3 270M base, `loopfix:gemma3-270m`)."""
    return Path(resolve_model_path("loopfix:gemma3-270m"))

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


@pytest.fixture(scope="session")
def smollm2_folder() -> Path:
    """The real model's converted folder (converted on the first use in a clean checkout)."""
    return Path(resolve_model_path("loopfix:smollm2"))


@pytest.fixture(scope="session")
def gemma3_folder() -> Path:
    """The second real model's converted folder (Gemma 3 270M base, `loopfix:gemma3-270m`)."""
    return Path(resolve_model_path("loopfix:gemma3-270m"))

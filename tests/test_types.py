"""mypy over src/ (pyproject.toml's settings: the typed records' modules under the strict
flags) finds every reader of a record that no longer fits it, so CI runs it."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_passes_over_the_package() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "src"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]

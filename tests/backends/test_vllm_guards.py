"""`VLLMBackend.load(..., guards=...)` on the bundled testbed, run in .venv-vllm (see
vllm_guards_check.py for what is checked)."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(), reason="no .venv-vllm (bash scripts/setup-vllm.sh)"
    ),
]


def test_vllm_backend_serves_guards_and_maps_cut_to_repetition_detection() -> None:
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "OMP_NUM_THREADS": "1",
    }
    script = Path(__file__).with_name("vllm_guards_check.py")
    result = subprocess.run(
        [str(VLLM_PYTHON), str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")

"""`VLLMBackend.load(..., guards=...)` on the bundled testbed, run in .venv-vllm (see
vllm_guards_check.py for what is checked)."""

import subprocess
from pathlib import Path

from tests.vllm_server import NEEDS_VLLM, VLLM_PYTHON, vllm_env

ROOT = Path(__file__).resolve().parents[2]
pytestmark = NEEDS_VLLM


def test_vllm_backend_serves_guards_and_maps_cut_to_repetition_detection() -> None:
    env = vllm_env(OMP_NUM_THREADS="1")
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

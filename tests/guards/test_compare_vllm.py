"""`loopfix compare --backend vllm` end to end on the bundled testbed, run from .venv-vllm."""

import json
import subprocess
from pathlib import Path

from tests.vllm_server import NEEDS_VLLM, VLLM_PYTHON, vllm_env

pytestmark = NEEDS_VLLM


def test_compare_on_vllm_runs_guards_per_request_and_cut_natively(tmp_path: Path) -> None:
    env = vllm_env(OMP_NUM_THREADS="1")
    out = tmp_path / "compare"
    command = [
        str(VLLM_PYTHON.with_name("loopfix")),
        "compare",
        "loopfix:stargraph",
        "--backend",
        "vllm",
        "--guards",
        "none,dry,cut",
        "--guard-arg",
        "cut.min_span=15",
        "--n",
        "16",
        "--temperatures",
        "0",
        "--max-new-tokens",
        "48",
        "--out",
        str(out),
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=400, cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == {"name": "vllm", "dtype": "float32"}  # not downcast
    entries = {e["guard"]: e for e in summary["entries"]}
    assert entries["none"]["loop_rate"] > 0.2  # the testbed loops at greedy
    assert entries["dry"]["loop_rate"] < entries["none"]["loop_rate"]
    cut = [
        json.loads(line)
        for line in (out / "runs" / "cut" / "T0" / "records.jsonl").read_text().splitlines()
    ]
    stopped = [r for r in cut if r["finish_reason"] == "repetition"]
    assert stopped and all(r["meta"]["guards"]["cut"]["position"] > 0 for r in stopped)
    assert entries["cut"]["cut_rate"] < entries["none"]["cut_rate"]

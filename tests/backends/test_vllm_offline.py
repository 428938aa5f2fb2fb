"""`loopfix scan --backend vllm` (offline vllm.LLM) run from .venv-vllm writes the same greedy
records as the hf backend (greedy tokens equal, or split only at a near-tie)."""

import json
import subprocess
from pathlib import Path

from loopfix.models import load_model
from loopfix.scan import ScanConfig, run_scan
from loopfix.suites import stargraph_suite
from tests.vllm_server import NEEDS_VLLM, VLLM_PYTHON, vllm_env

from .greedy import assert_same_greedy

pytestmark = NEEDS_VLLM
OPTIONS = {"model": "loopfix:stargraph", "n": 6, "temperatures": [0.0, 1.0], "max_new_tokens": 32}


def rows(out: Path) -> dict[tuple, dict]:
    lines = (out / "records.jsonl").read_text().splitlines()
    return {(r["prompt_id"], r["settings"]["temperature"]): r for r in map(json.loads, lines)}


def test_offline_vllm_scan_matches_hf_greedy(tmp_path: Path) -> None:
    env = vllm_env()
    command = [
        str(VLLM_PYTHON),
        "-c",
        "from loopfix.cli import main; main()",
        "scan",
        OPTIONS["model"],
        "--backend",
        "vllm",
        "--n",
        "6",
        "--temperatures",
        "0,1",
        "--max-new-tokens",
        "32",
        "--out",
        str(tmp_path / "vllm"),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, env=env, timeout=400)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    run_scan(ScanConfig(**OPTIONS, out=tmp_path / "hf"))  # type: ignore[arg-type]
    vllm, hf = rows(tmp_path / "vllm"), rows(tmp_path / "hf")
    assert vllm.keys() == hf.keys()
    # Like with like: both ran the checkpoint's float32, whatever bf16 support the CPU has.
    for run in ("vllm", "hf"):
        summary = json.loads((tmp_path / run / "summary.json").read_text())
        assert summary["backend"] == {"name": run, "dtype": "float32"}
    model, tokenizer = load_model("loopfix:stargraph", device="cpu")
    prompts = {item.id: tokenizer(item.prompt)["input_ids"] for item in stargraph_suite(6, 0)}
    for key, record in vllm.items():
        assert set(record) == set(hf[key])  # one record shape for every backend
        if key[1] == 0.0:
            ours, theirs = hf[key]["tokens"], record["tokens"]
            if assert_same_greedy(model, prompts[key[0]], ours, theirs):
                assert record["finish_reason"] == hf[key]["finish_reason"]

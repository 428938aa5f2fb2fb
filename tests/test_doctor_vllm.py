"""The doctor's stages on offline vLLM (the measure of a model our engine has no compiled
kernels for runs there)."""

import json
from pathlib import Path

from loopfix.doctor import DoctorConfig
from loopfix.doctor.config import REPAIR_LOOPS
from loopfix.doctor.stages import measure_stage, top_up_prompts, top_up_scan
from loopfix.models import load_model
from loopfix.repair.sources.scan_records import read_records
from tests.vllm_server import NEEDS_VLLM

pytestmark = NEEDS_VLLM


def test_a_measure_on_vllm_is_topped_up_on_vllm_so_the_repair_merges_both(tmp_path: Path) -> None:
    # The repair merges the top-up's records with the measure's only when one backend generated
    # both (on Gemma 3 the measure ran on vLLM and an hf top-up was refused).
    config = DoctorConfig(
        model="loopfix:stargraph",
        out=tmp_path,
        suite="stargraph",
        n=6,
        temperatures=[0.0],
        max_new_tokens=48,
        measure_backend="vllm",
    )
    lines: list[str] = []
    measure = measure_stage(config, None, lines.append)
    assert measure.backend == "vllm" and 0 < measure.loops < REPAIR_LOOPS
    extra = top_up_scan(measure.config, measure, lines.append)
    top_up = json.loads((tmp_path / "repair-top-up" / "summary.json").read_text())
    assert top_up["backend"]["name"] == "vllm"
    _, tokenizer = load_model("loopfix:stargraph", device="cpu")
    records = Path(measure.scan) / "records.jsonl"
    merged = read_records(records, "stargraph", "loopfix:stargraph", tokenizer, extra)
    assert len(merged.items) == 6 + top_up_prompts(measure, measure.config) == 6 + 2 * 6

"""The real model, end to end: SmolLM2-135M-Instruct from its GGUF file (`loopfix:smollm2`)."""

import copy
import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from loopfix.backends.hf import HFBackend
from loopfix.cli import app
from loopfix.doctor import DoctorConfig, run_doctor
from loopfix.doctor.config import QUICK_GUARDS
from loopfix.models import file_sha256, load_model
from loopfix.models.packaged import packaged_model_path
from loopfix.scan import ScanConfig, run_scan
from loopfix.suites import arith_suite
from loopfix.suites.render import prompt_ids
from loopfix.suites.tasks import tasks_suite
from tests.decoding import assert_engine_equals_generate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2(smollm2_folder: Path):
    return load_model("loopfix:smollm2", device="cpu")


def test_second_load_reuses_the_converted_folder(smollm2_folder: Path) -> None:
    assert smollm2_folder.name == file_sha256(packaged_model_path("smollm2"))
    weights = smollm2_folder / "model.safetensors"
    written, listing = weights.stat().st_mtime_ns, sorted(smollm2_folder.parent.iterdir())
    model, _ = load_model("loopfix:smollm2", device="cpu", dtype="bfloat16")
    assert model.dtype == torch.bfloat16  # the float32 folder, cast to the requested dtype
    assert weights.stat().st_mtime_ns == written
    assert sorted(smollm2_folder.parent.iterdir()) == listing  # no second conversion


def test_chat_template_and_end_of_turn(smollm2) -> None:
    model, tokenizer = smollm2
    assert model.dtype == torch.float32 and model.config.model_type == "llama"
    # SmolLM2-Instruct ends a turn with <|im_end|>: generation must stop there.
    assert tokenizer.eos_token == "<|im_end|>"
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id
    text = tokenizer.decode(prompt_ids(arith_suite(1, seed=0)[0], tokenizer))
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")


def test_engine_equals_model_generate_on_the_real_model(smollm2) -> None:
    model, tokenizer = smollm2
    prompts = [prompt_ids(item, tokenizer) for item in arith_suite(2, seed=5)]
    assert_engine_equals_generate(model, tokenizer, prompts)


def test_short_scan_judges_real_answers(tmp_path: Path, smollm2_folder: Path) -> None:
    out = tmp_path / "scan"
    arguments = ["scan", "loopfix:smollm2", "--suite", "arith", "--n", "4"]
    arguments += ["--temperatures", "0", "--max-new-tokens", "64", "--out", str(out)]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 4
    for record in records:
        assert record["length"] > 0 and record["text"].strip()
        assert record["correct"] in (True, False)  # free text judged, no \boxed{} needed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"][0]["judged"] == 4


def test_without_its_template_the_model_stops_where_it_starts_the_next_question(
    smollm2, tmp_path: Path
) -> None:
    """Completion prompting on a real model: the tasks transcript's answer ends at the next
    `Question:` the model writes (within its first 16 tokens at greedy, as measured), a normal
    stop (never a loop) whose text leaves the stop text out."""
    model, tokenizer = smollm2
    base = copy.deepcopy(tokenizer)
    base.chat_template = None  # as a base model's tokenizer comes
    scan = ScanConfig(
        model="loopfix:smollm2",
        suite="tasks",
        n=4,
        seed=0,
        temperatures=[0.0],
        max_new_tokens=16,
        out=tmp_path / "scan",
    )
    run_scan(scan, backend=HFBackend(model, base, batch_size=4))
    lines = (tmp_path / "scan" / "records.jsonl").read_text().splitlines()
    records = {record["prompt_id"]: record for record in map(json.loads, lines)}
    days = records[tasks_suite(4, seed=0)[3].id]
    assert (days["finish_reason"], days["meta"]["stop"]) == ("stop", "\nQuestion:")
    assert days["text"] == " Monday, Tuesday, Wednesday, Thursday\n" and days["correct"]
    assert tokenizer.decode(days["tokens"]).endswith("Thursday\n\nQuestion:")
    # Rows that end at EOS or the cap say no stop text.
    assert all("stop" not in r["meta"] for r in records.values() if r is not days)


def test_the_quick_doctor_runs_on_the_real_model(smollm2_folder: Path, tmp_path: Path) -> None:
    # docs/doctor.md: `loopfix doctor loopfix:smollm2 --quick`, about 47 s of stages at 88a7df4.
    result = run_doctor(DoctorConfig(model="loopfix:smollm2", quick=True, out=tmp_path))
    summary = json.loads((tmp_path / "summary.json").read_text())
    settings = summary["measure"]["settings"]
    assert [s["temperature"] for s in settings] == [0.0, 0.6, 1.0]
    # A quick look measures on hf: too small to repay vLLM's start (docs/doctor.md).
    assert (summary["measure"]["backend"], summary["measure"]["dtype"]) == ("hf", "float32")
    assert all(s["n"] == 12 and s["judged"] > 0 for s in settings)  # free-text answers judged
    assert settings[0]["cut_rate"] > 0  # SmolLM2 runs to the cap at greedy
    assert [e["guard"] for e in summary["guards"]["entries"]] == list(QUICK_GUARDS)
    assert result.recommendation.guard in QUICK_GUARDS
    assert summary["consistency"]["skipped"] and (tmp_path / "report.html").is_file()

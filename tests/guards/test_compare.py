import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.guards import GuardError
from loopfix.models import tiny_model, tiny_tokenizer
from loopfix.records import SampleStore
from loopfix.scan import ScanConfig
from loopfix.scan.guard_comparison import CompareConfig, run_compare


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    tiny_model("llama").save_pretrained(folder)
    tokenizer = tiny_tokenizer()
    tokenizer.pad_token = tokenizer.eos_token
    tokenizer.save_pretrained(folder)
    return folder


def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.jsonl"
    items = [
        {"id": "a", "prompt": "b c d", "answer": "x", "checker": "exact"},
        {"id": "b", "prompt": "e f g h", "answer": "y", "checker": "exact"},
    ]
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def config(model: Path, tmp_path: Path, guards: list[str], **args: object) -> CompareConfig:
    scan = ScanConfig(
        model=str(model),
        suite=str(suite(tmp_path)),
        temperatures=[0.0],
        max_new_tokens=16,
        device="cpu",
        out=tmp_path / "out",
    )
    return CompareConfig(scan=scan, guards=guards, guard_args=dict(args))


def test_compare_pairs_every_guard_with_none(tiny_folder: Path, tmp_path: Path) -> None:
    summary = run_compare(
        config(tiny_folder, tmp_path, ["rescue", "dry"], **{"rescue.min_span": 6})
    )
    entries = {entry.guard: entry for entry in summary.entries}
    assert list(entries) == ["none", "rescue", "dry"]  # the baseline is always run first
    for entry in entries.values():
        assert entry.summary.n == 2 and entry.tokens_per_s is not None and entry.tokens_per_s > 0
        assert entry.paired is not None and entry.paired.regressions >= 0
    records = list(SampleStore(tmp_path / "out" / "runs" / "rescue" / "T0" / "records.jsonl"))
    assert len(records) == 2  # every sample's record says what the guards did
    logged = [rescue for s in records for rescue in s.meta["guards"]["rescues"]]
    assert entries["rescue"].rescues_performed == len(logged)
    assert (tmp_path / "out" / "report.html").read_text().count("<tr>") == 4
    # A rerun resumes: nothing is generated again and the summary is the same.
    again = run_compare(config(tiny_folder, tmp_path, ["rescue", "dry"], **{"rescue.min_span": 6}))
    assert [e.summary for e in again.entries] == [e.summary for e in entries.values()]
    # Another comparison into the same directory is refused before anything is generated.
    with pytest.raises(GuardError, match="other guards or settings"):
        run_compare(config(tiny_folder, tmp_path, ["dry"]))


def test_the_command_names_a_bad_guard_before_loading_anything(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["compare", "no/such-model", "--guards", "none,dyr", "--out", str(tmp_path / "o")],
    )
    assert result.exit_code == 2
    assert "unknown guard 'dyr'" in result.output
    result = CliRunner().invoke(
        app,
        ["compare", "no/such-model", "--guard-arg", "dry.mult=1", "--out", str(tmp_path / "o")],
    )
    assert result.exit_code == 2
    assert "guard 'dry' has no parameter 'mult'" in result.output


def test_pairs_are_exact_at_any_temperature(tiny_folder: Path, tmp_path: Path) -> None:
    # A cut that cannot fire leaves every step's logits alone: at T=1 it must draw exactly
    # what "none" draws (same engine, same per-request random numbers), not merely "similar".
    base = config(tiny_folder, tmp_path, ["cut"], **{"cut.min_span": 64, "cut.max_period": 32})
    scan = base.scan.model_copy(update={"temperatures": [1.0], "samples": 3})
    summary = run_compare(base.model_copy(update={"scan": scan}))
    none, cut = summary.entries
    runs = tmp_path / "out" / "runs"
    tokens = {
        spec: [s.tokens for s in SampleStore(runs / spec / "T1" / "records.jsonl")]
        for spec in ("none", "cut")
    }
    assert tokens["none"] == tokens["cut"] and len(tokens["none"]) == 6
    assert cut.paired is not None and cut.paired.rescues == cut.paired.regressions == 0
    assert cut.summary.loop_rate == none.summary.loop_rate

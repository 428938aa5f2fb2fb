"""The rescue and outcome sources on a real scan of the testbed, and how a source is picked.

One small greedy + T=1 scan of `loopfix:stargraph` (it loops at greedy on about half of its
prompts) feeds every test here."""

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loopfix.backends.hf import HFBackend
from loopfix.cli import app
from loopfix.models import load_model
from loopfix.records import Sample, read_samples
from loopfix.repair import RepairConfig, RepairInputError
from loopfix.repair.sources import source_for
from loopfix.repair.sources.base import BranchPair
from loopfix.repair.sources.loops import Loop, loops_again
from loopfix.repair.sources.outcome import OutcomeSource
from loopfix.repair.sources.records import PairRequest
from loopfix.repair.sources.rescue import RescueSource
from loopfix.repair.sources.scan_records import ScanRecords, read_records
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.summary import is_loop
from loopfix.stages import StageClock

MODEL = "loopfix:stargraph"
GENERATION = RepairConfig(gen_batch_size=64)


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stargraph") / "scan"
    config = ScanConfig(
        model=MODEL, suite="stargraph", n=100, temperatures=[0.0, 1.0], max_new_tokens=64, out=out
    )
    run_scan(config)
    return out / "records.jsonl"


@pytest.fixture(scope="module")
def testbed(scanned: Path) -> tuple[Any, Any, ScanRecords]:
    model, tokenizer = load_model(MODEL, device="cpu")
    return model, tokenizer, read_records(scanned, "stargraph", MODEL, tokenizer)


def _generated(records: ScanRecords, prompt: list[int]) -> list[list[int]]:
    """The generated tokens of every sample whose prompt is `prompt`."""
    return [s.tokens for s in records.samples if records.prompts[s.prompt_id] == prompt]


def _split(records: ScanRecords, prefix: list[int]) -> tuple[list[int], list[int]]:
    """(prompt, generated tokens before the branch point) of a pair's prefix."""
    (prompt,) = {tuple(p) for p in records.prompts.values() if prefix[: len(p)] == p}
    return list(prompt), prefix[len(prompt) :]


def test_rescue_pairs_are_the_loop_against_the_engines_way_out(
    testbed: tuple[Any, Any, ScanRecords],
) -> None:
    model, tokenizer, records = testbed
    eos = tokenizer.eos_token_id
    pairs, counts = RescueSource().pairs(
        model, tokenizer, PairRequest(records, list(records.items), 3, 1000, 5), GENERATION
    )
    looping = sum(is_loop(s) for s in records.samples)
    assert counts.looping_samples == looping > 0
    # Every looping sample gives two continuations (greedy, sampled at 0.6), each a pair or
    # counted as dropped, and a sample whose loop cannot be cut counts once for both.
    dropped = counts.dropped
    per_sample = dropped.get("loop_not_located", 0) + dropped.get("loop_too_short", 0)
    per_variant = sum(v for k, v in dropped.items() if k.startswith(("greedy_", "sampled_")))
    assert counts.pairs + per_variant == 2 * (looping - per_sample)
    assert counts.by_variant is not None
    assert counts.by_variant["greedy"] + counts.by_variant["sampled"] == len(pairs) > 0
    assert counts.by_variant["greedy"] > 0 and counts.by_variant["sampled"] > 0
    assert counts.temperatures == {"greedy": 0.0, "sampled": 0.6}
    for pair in pairs:
        prompt, before = _split(records, pair.prefix)
        # The repetitive branch is the loop's own continuation from its first repeat.
        assert any(
            tokens[: len(before) + len(pair.repetitive)] == before + pair.repetitive
            for tokens in _generated(records, prompt)
        )
        assert pair.variant in ("greedy", "sampled")
        assert len(pair.productive) == len(pair.repetitive) >= 2 * pair.skip
        assert eos not in pair.productive and eos not in pair.repetitive
        assert pair.productive[0] != pair.repetitive[0]  # the rescue's ban at the branch point
        assert not loops_again(tokenizer, _loop_of(pair, prompt, before), pair.productive)
    # Capped pairs keep the first ones, both variants of a loop side by side.
    capped, capped_counts = RescueSource().pairs(
        model, tokenizer, PairRequest(records, list(records.items), 3, 2, 5), GENERATION
    )
    assert capped == pairs[:2] and capped_counts.pairs == 2


def _loop_of(pair: BranchPair, prompt: list[int], before: list[int]) -> Loop:
    return Loop(prompt, before, pair.repetitive, pair.skip, len(pair.repetitive))


def test_outcome_pairs_are_looping_and_converging_runs_of_one_prompt(
    testbed: tuple[Any, Any, ScanRecords],
) -> None:
    model, tokenizer, records = testbed
    eos = tokenizer.eos_token_id
    pairs, counts = OutcomeSource().pairs(
        model, tokenizer, PairRequest(records, list(records.items), 3, 1000, 0), GENERATION
    )
    assert counts.pairs == len(pairs) > 0
    assert counts.pairs + sum(counts.dropped.values()) == counts.looping_samples
    by_id: dict[str, list[Sample]] = {s.prompt_id: [] for s in records.samples}
    for sample in records.samples:
        by_id[sample.prompt_id].append(sample)
    for pair in pairs:
        prompt, shared = _split(records, pair.prefix)
        assert len(pair.productive) == len(pair.repetitive) >= 16 and pair.skip == 0
        assert eos not in pair.productive and eos not in pair.repetitive
        assert pair.productive[0] != pair.repetitive[0]  # the runs part at the branch point
        (prompt_id,) = {i for i, p in records.prompts.items() if p == prompt}
        window = shared + pair.repetitive
        assert any(is_loop(s) and s.tokens[: len(window)] == window for s in by_id[prompt_id])
        window = shared + pair.productive
        assert any(
            s.finish_reason == "stop" and not is_loop(s) and s.tokens[: len(window)] == window
            for s in by_id[prompt_id]
        )


def test_records_without_loops_are_refused_in_one_line(
    scanned: Path, tmp_path: Path, testbed: tuple[Any, Any, ScanRecords]
) -> None:
    model, tokenizer, _ = testbed
    generator = HFBackend(model, tokenizer, batch_size=16, source=MODEL)
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    shutil.copy(scanned.parent / "scan.json", quiet / "scan.json")
    kept = [s for s in read_samples(scanned) if not is_loop(s)]
    (quiet / "records.jsonl").write_text("".join(json.dumps(s.to_dict()) + "\n" for s in kept))
    config = RepairConfig.preset("suite", source="rescue", records=quiet / "records.jsonl")
    with pytest.raises(RepairInputError, match="holds no looping sample"):
        source_for(config).build(generator, MODEL, tmp_path, config, StageClock(print))


def test_the_source_is_picked_from_the_config() -> None:
    assert source_for(RepairConfig()).name == "testbed"
    assert source_for(RepairConfig.preset("suite", suite="arith", source="rescue")).name == "rescue"
    suite = RepairConfig.preset("suite", suite="arith", source="outcome")
    assert source_for(suite).name == "outcome"
    with pytest.raises(RepairInputError, match="--source scan builds its branches from scan"):
        source_for(RepairConfig(source="scan"))
    with pytest.raises(RepairInputError, match="--source testbed .* takes no --suite"):
        source_for(RepairConfig(source="testbed", suite="arith"))


runner = CliRunner()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--source", "teacher"], "--source"),
        (["--source", "rescue"], "--source rescue builds its branches from scan records"),
    ],
)
def test_bad_source_choices_are_one_line_errors(
    arguments: list[str], message: str, tmp_path: Path
) -> None:
    result = runner.invoke(app, ["repair", MODEL, "--out", str(tmp_path / "out"), *arguments])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_the_testbed_source_refuses_a_model_without_a_teacher(
    tiny_folder: Path, tmp_path: Path
) -> None:
    arguments = ["repair", str(tiny_folder), "--source", "testbed", "--out", str(tmp_path)]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 2
    assert "is not a star-graph testbed" in " ".join(result.output.split())


def test_repair_runs_end_to_end_on_rescue_branches(scanned: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    arguments = ["repair", MODEL, "--source", "rescue", "--records", str(scanned)]
    # At T=0.6 (the testbed's loops are sampled ones) the rescue makes both variants.
    small = ["--ks", "8", "--alphas", "2", "--prompts", "50", "--temperature", "0.6"]
    small += ["--max-touched-fraction", "0.01"]  # a tiny model: 8 columns are 0.5% of it
    small += ["--out", str(out)]
    result = runner.invoke(app, arguments + small)
    assert result.exit_code == 0, result.output
    verify = json.loads((out / "verify.json").read_text())
    branches = verify["branches"]
    assert branches["source"] == "rescue" and branches["records"] == str(scanned)
    assert branches["train"]["pairs"] > 0 and branches["heldout"]["pairs"] > 0
    assert set(branches["train"]["by_variant"]) == {"greedy", "sampled"}
    assert verify["config"]["source"] == "rescue"
    assert verify["screening"], "the rescue branches' candidates were never screened"
    # Whether 8 columns of a tiny model pass screening moves with the numerics of the torch and
    # transformers installed: what must hold is that the verdict and its files agree.
    if verify["accepted"]:
        assert Path(verify["patch"]).is_file()
    else:
        assert verify["patch"] is None and verify["stopped_at"] and verify["verdict"]
    assert "source rescue" in (out / "report.md").read_text()

"""The own-model early warning (`loopfix warn`): its features and fitting on constructed inputs,
its signals against what the decode engine computed, and a fit + lead-time measurement on the
bundled testbed's own scan records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from loopfix.backends.base import Request
from loopfix.backends.hf import HFBackend, generate
from loopfix.backends.spec import GuardSpec
from loopfix.cli import app
from loopfix.errors import LoopfixError
from loopfix.leadtime.config import WarningConfig, WarningError
from loopfix.leadtime.run import length_rule, part_of, run_warning, text_step
from loopfix.models import load_model
from loopfix.records import DecodeSettings
from loopfix.scan import ScanConfig, run_scan
from loopfix.states.steps import StepSignals, step_signals
from loopfix.states.warning import (
    ENTROPY_LOW,
    STREAK_WINDOWS,
    WarningProbe,
    choose_threshold,
    fit_logistic,
    step_labels,
    window_features,
)
from loopfix.suites import load_suite
from loopfix.suites.render import prompt_ids

runner = CliRunner()


def test_window_features_average_and_read_the_flywheel_and_the_streak() -> None:
    hidden = np.arange(12, dtype=np.float32).reshape(6, 2)
    top1 = np.array([0.2, 0.2, 0.4, 0.6, 0.8, 1.0])
    entropy = np.array([1.0, ENTROPY_LOW / 2, ENTROPY_LOW / 2, 1.0, 0.0, 0.0])
    features = window_features(StepSignals(hidden, top1, entropy), window=2)
    np.testing.assert_allclose(features[0, :2], hidden[0])  # fewer steps at the start
    np.testing.assert_allclose(features[3, :2], hidden[2:4].mean(axis=0))
    np.testing.assert_allclose(features[:, 2], [0.2, 0.2, 0.3, 0.5, 0.7, 0.9])
    np.testing.assert_allclose(features[:, 3], [0, 0, 0.3 - 0.2, 0.5 - 0.2, 0.7 - 0.3, 0.9 - 0.5])
    np.testing.assert_allclose(features[:, 4], [0, 0.5, 1.0, 0, 0.5, 1.0])
    flat = StepSignals(np.zeros((30, 2)), np.full(30, 0.9), np.zeros(30))
    assert window_features(flat, window=2)[:, 4].max() == STREAK_WINDOWS  # it saturates


def test_the_fit_separates_and_the_threshold_allows_the_stated_false_alarms() -> None:
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], [300, 60])
    features = rng.normal(size=(360, 3)) + labels[:, None] * np.array([2.0, 0.0, -1.0])
    weights, bias = fit_logistic(features, labels, strength=1.0)
    assert weights[0] > 0 > weights[2] and abs(weights[1]) < 0.3 * weights[0]
    scores = features @ weights + bias
    assert (scores[labels == 1] > 0).mean() > 0.8 and (scores[labels == 0] < 0).mean() > 0.8
    with pytest.raises(ValueError, match="both kinds"):
        fit_logistic(features, np.zeros(360, dtype=int), 1.0)
    maxima = [0.1, 0.9, 0.5, 0.3, 0.7, 0.2, 0.4, 0.8, 0.6, 0.05]
    threshold = choose_threshold(maxima, 0.2)  # 2 of 10 may fire: 0.9 and 0.8
    assert sum(m >= threshold for m in maxima) == 2 and threshold <= 0.7 + 1e-9 + 0.1
    assert sum(m >= choose_threshold(maxima, 0.05) for m in maxima) == 0
    assert length_rule([10, 40, 12, 11, 9, 50, 13, 8, 10, 12], 0.2) == 13
    assert step_labels(5, 2).tolist() == [0, 0, 1, 1, 1] and step_labels(3, None).sum() == 0
    shares = [part_of(f"p{i}", 1 / 3) for i in range(3000)]
    assert shares == [part_of(f"p{i}", 1 / 3) for i in range(3000)]
    assert 0.3 < shares.count("heldout") / 3000 < 0.37


def test_the_signals_are_what_the_engine_computed_while_generating() -> None:
    model, tokenizer = load_model("loopfix:stargraph", device="cpu")
    items = load_suite("stargraph", 6, 3)
    prompts = [prompt_ids(item, tokenizer) for item in items]
    settings = DecodeSettings(temperature=0.0, max_new_tokens=48)
    for prompt, generation in zip(
        prompts, generate(model, tokenizer, prompts, settings, 3, capture=True), strict=True
    ):
        signals = step_signals(model, prompt, generation.tokens, layer=2)
        assert signals.hidden.shape == (len(generation.tokens), model.config.hidden_size)
        np.testing.assert_allclose(signals.top1, generation.top1, atol=1e-4)
        np.testing.assert_allclose(signals.entropy, generation.entropy, atol=1e-3)


@pytest.fixture(scope="module")
def testbed_scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scan")
    config = ScanConfig(
        model="loopfix:stargraph",
        suite="stargraph",
        n=240,
        seed=5,
        temperatures=[0.0],
        max_new_tokens=48,
        out=out,
    )
    run_scan(config)
    return out


def test_a_warning_fitted_on_the_testbeds_records_fires_before_the_text_tier(
    testbed_scan: Path, tmp_path: Path
) -> None:
    config = WarningConfig(records=str(testbed_scan), model="loopfix:stargraph", window=8)
    probe, parts = run_warning(config, tmp_path, lambda line: None)
    tune, _, heldout, heldout_length = parts
    assert (tune.part, tune.rule, heldout.part, heldout_length.rule) == (
        "tune",
        "probe",
        "heldout",
        "length",
    )
    assert tune.false_alarms <= 0.05 * tune.clean and tune.clean > 20 and tune.loops > 20
    assert heldout.loops > 10 and heldout.text_fired > 0
    # Most loops are warned before the watch that rescue acts on finds them.
    assert heldout.earlier >= 0.8 * heldout.text_fired and heldout.lead_percentiles["p50"] > 0
    saved = json.loads((tmp_path / "warning_probe.json").read_text())
    reloaded = WarningProbe.from_json(saved)
    assert reloaded.threshold == probe.threshold and reloaded.layer == 2  # 2 of 3 layers deep
    rows = json.loads((tmp_path / "warning.json").read_text())["samples"]
    assert len(rows) == 240 and {row["part"] for row in rows} == {"tune", "heldout"}
    signals_only = WarningConfig(**{**config.model_dump(), "features": "signals"})
    small, _ = run_warning(signals_only, tmp_path / "signals", lambda line: None)
    assert not small.states and len(small.weights) == 4 and len(probe.weights) == 64 + 4
    looping = next(row for row in rows if row["kind"] == "loop" and row["text_step"] is not None)
    assert looping["onset"] is not None and looping["text_step"] >= looping["onset"]


def test_the_watch_step_and_records_without_clean_samples(
    testbed_scan: Path, tmp_path: Path
) -> None:
    assert text_step([1, 2, 3] * 20) is not None and text_step(list(range(60))) is None
    records = (testbed_scan / "records.jsonl").read_text().splitlines()
    loops_only = [line for line in records if json.loads(line)["finish_reason"] == "length"]
    folder = tmp_path / "scan"
    folder.mkdir()
    (folder / "records.jsonl").write_text("\n".join(loops_only) + "\n")
    (folder / "scan.json").write_text((testbed_scan / "scan.json").read_text())
    config = WarningConfig(records=str(folder), model="loopfix:stargraph")
    with pytest.raises(WarningError, match="needs looping and clean samples"):
        run_warning(config, tmp_path / "out", lambda line: None)


def test_the_cli_fits_and_prints_both_rules(testbed_scan: Path, tmp_path: Path) -> None:
    other_seed = tmp_path / "seed-6"
    config = json.loads((testbed_scan / "scan.json").read_text())["config"]
    run_scan(ScanConfig(**{**config, "seed": 6, "n": 30, "out": other_seed}))
    args = ["warn", str(testbed_scan), "loopfix:stargraph", "--window", "8"]
    merged = [*args, "--extra", str(other_seed), "--out", str(tmp_path / "w")]
    result = runner.invoke(app, merged, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "length" in result.output and "heldout" in result.output
    rows = json.loads((tmp_path / "w" / "warning.json").read_text())["samples"]
    assert len(rows) == 240 + 30
    bad = runner.invoke(app, [*args, "--false-alarm", "2"])
    assert bad.exit_code == 2 and "--false-alarm" in bad.output


def test_a_scan_reads_the_warning_and_an_early_rescue_acts_on_it(
    testbed_scan: Path, tmp_path: Path
) -> None:
    probe, _ = run_warning(
        WarningConfig(records=str(testbed_scan), model="loopfix:stargraph", window=8),
        tmp_path / "warn",
        lambda line: None,
    )
    config = json.loads((testbed_scan / "scan.json").read_text())["config"]
    warned_scan = ScanConfig(
        **{**config, "n": 60, "warning": str(tmp_path / "warn" / "warning_probe.json")},
        out=tmp_path / "warned",
    )
    run_scan(warned_scan)
    plain = {
        json.loads(line)["prompt_id"]: json.loads(line)
        for line in (testbed_scan / "records.jsonl").read_text().splitlines()
    }
    warned_lines = (tmp_path / "warned" / "records.jsonl").read_text().splitlines()
    warned = [json.loads(line) for line in warned_lines]
    # reading the model changes nothing it generates; the warning fires on the loops
    assert all(record["tokens"] == plain[record["prompt_id"]]["tokens"] for record in warned)
    loops = [r for r in warned if r["finish_reason"] == "length"]
    assert loops and sum("warning_step" in r["meta"] for r in loops) >= 0.8 * len(loops)

    model, tokenizer = load_model("loopfix:stargraph", device="cpu")
    items = load_suite("stargraph", 60, 5)
    requests = [Request(ids=prompt_ids(item, tokenizer), seed=0) for item in items]
    settings = DecodeSettings(temperature=0.0, max_new_tokens=48)

    def rescues(early: bool) -> list[list[int]]:
        guards = GuardSpec.parse("rescue", {"rescue.early": early})
        backend = HFBackend(model, tokenizer, 16, guards=guards, warning=probe)
        found: list[list[int]] = [[] for _ in requests]
        for index, generation in backend.generate(requests, settings):
            record = generation.guards or {}
            found[index] = [r["detected_at"] for r in record.get("rescues", [])]
        return found

    late, early = rescues(False), rescues(True)
    # the early rescue acts on 2 copies once warned: its first rescue comes sooner
    firsts = [
        (soon[0], later[0]) for soon, later in zip(early, late, strict=True) if soon and later
    ]
    assert firsts and all(a <= b for a, b in firsts) and any(a < b for a, b in firsts)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(LoopfixError, match="--warning: .*bad.json lacks 'model'"):
        run_scan(ScanConfig(**{**config, "n": 4, "warning": str(bad)}, out=tmp_path / "b"))

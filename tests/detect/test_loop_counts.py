"""One run, one number per concept (issue 37): on a real scan of the testbed, the summary's
`loops` and `detector_looping` equal the records they name, and `loopfix detect` on the records
reports the same two numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopfix.backends import HFBackend
from loopfix.cli import app
from loopfix.records import read_samples
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.summary import detector_looping, is_loop


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Greedy testbed walks at the testbed's own cap: some loop to the cap, some repeat a
    stretch and then stop by themselves (found on stargraph-0-11 and -27)."""
    out = tmp_path_factory.mktemp("scan")
    backend = HFBackend.load("loopfix:stargraph", device="cpu", batch_size=8)
    config = ScanConfig(
        model="loopfix:stargraph", suite="stargraph", n=30, temperatures=[0.0], out=out
    )
    run_scan(config, backend=backend)
    return out


def test_each_summary_count_is_the_records_it_names(scan: Path) -> None:
    samples = list(read_samples(scan / "records.jsonl"))
    summary = json.loads((scan / "summary.json").read_text())
    loops, flagged = sum(map(is_loop, samples)), sum(map(detector_looping, samples))
    assert summary["loops"] == loops == sum(s["loops"] for s in summary["settings"])
    assert summary["detector_looping"] == flagged
    assert flagged == sum(s.looping for s in samples)
    assert loops == sum(s.finish_reason == "length" and detector_looping(s) for s in samples)
    # The two concepts differ on this run: repetitions the model left by itself.
    escaped = [s for s in samples if detector_looping(s) and s.finish_reason == "stop"]
    assert escaped and flagged == loops + len(escaped)


def test_detect_on_the_records_reports_both_numbers(scan: Path, tmp_path: Path) -> None:
    samples = list(read_samples(scan / "records.jsonl"))
    summary = json.loads((scan / "summary.json").read_text())
    verdicts = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(
        app, ["detect", str(scan / "records.jsonl"), "--json", str(verdicts)]
    )
    assert result.exit_code == 0, result.output
    counts = re.search(r"(\d+) looping \((\d+) cut at the token limit while", result.stdout)
    assert counts is not None, result.stdout
    assert int(counts[1]) == summary["detector_looping"]
    assert int(counts[2]) == summary["loops"]
    rows = [json.loads(line) for line in verdicts.read_text().splitlines()]
    assert [row["looping"] for row in rows] == list(map(detector_looping, samples))
    assert [(row["id"], row["line"]) for row in rows] == [
        (s.prompt_id, line) for line, s in enumerate(samples, 1)
    ]

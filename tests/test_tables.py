"""The scan, scan --compare and compare tables fit an 80-column terminal: no header or cell is
cut to "…", and the caption spells out every shortened header."""

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from loopfix.cli.compare import compare_table as guards_table
from loopfix.cli.scan import compare_table, summary_table
from loopfix.scan import ScanConfig, compare_runs, run_scan
from loopfix.scan.guard_comparison import CompareConfig, run_compare
from loopfix.summaries import Rate, ScanSummary


def rendered(table: object) -> str:
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined]


def assert_fits(text: str, *words: str) -> None:
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    for word in words:
        assert word in text


@pytest.fixture(scope="module")
def scans(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tables")
    base = {"model": "loopfix:stargraph", "n": 4, "max_new_tokens": 48, "batch_size": 4}
    runs = []
    for name, top_k in (("a", 0), ("b", 2)):
        runs.append(root / name)
        run_scan(ScanConfig(**base, temperatures=[0.0, 0.6, 1.0], top_k=top_k, out=runs[-1]))
    return runs[0], runs[1]


def test_scan_tables_fit_80_columns(scans: tuple[Path, Path]) -> None:
    summary = ScanSummary.from_json(json.loads((scans[0] / "summary.json").read_text()))
    assert_fits(rendered(summary_table(summary, "loopfix:stargraph on stargraph")), "acc¬loop")
    result = compare_runs(scans[0], scans[1])
    assert_fits(rendered(compare_table(result, *scans)), "McNemar", "acc A→B")


def test_the_guard_table_fits_80_columns(tmp_path: Path) -> None:
    scan = ScanConfig(
        model="loopfix:stargraph", n=2, temperatures=[0.0], max_new_tokens=32, out=tmp_path
    )
    guards = ["none", "penalty", "adaptive-temp", "rescue+dry"]
    result = run_compare(CompareConfig(scan=scan, guards=guards))
    assert_fits(rendered(guards_table(result)), "adaptive-temp", "rescue+dry", "tokens/s")
    # The same rows at the widest values a full run prints (a thousand prompts, every rate
    # 100%, four-digit counts): a tiny run's narrow cells must not be what makes it fit.
    widest = [
        replace(
            entry,
            guard="phase-temp+rescue",
            summary=replace(
                entry.summary,
                n=1000,
                loop_rate=Rate(1.0, None),
                cut_rate=Rate(1.0, None),
                accuracy=Rate(1.0, None),
                mean_length=1024.5,
            ),
            paired=replace(entry.paired, rescues=1000, regressions=1000),
            rescues_performed=1000,
            tokens_per_s=12345.6,
        )
        for entry in result.entries
        if entry.paired is not None
    ]
    assert_fits(rendered(guards_table(replace(result, entries=widest))), "phase-temp+rescue")

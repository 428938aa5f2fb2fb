"""`report.html` of a guard comparison: the table, and loop rate / accuracy per guard.

The table leads with answers: each guard's rank at its temperature, the samples it rescued and
the regressions it caused against "none" and McNemar's exact p, then cut and loop rates, and
its rows come in rank order (the ranking, `answers_first`, is computed by
`loopfix.scan.guard_comparison` and stored as each entry's `rank`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from loopfix.atomic import write_text_atomic
from loopfix.guard_summaries import CompareResult, GuardEntry
from loopfix.report.page import page
from loopfix.report.svg import Series, rate_chart

__all__ = ["COLUMNS", "TERMINAL_COLUMNS", "Column", "by_rank", "write_compare_report"]


def _text(value: int | None) -> str:
    return "–" if value is None else str(value)


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _decimal(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


@dataclass(frozen=True)
class Column:
    """One column of the guard table: its header for a terminal and in full, and its cell
    ("–" for a value that is missing)."""

    short: str
    header: str
    cell: Callable[[GuardEntry], str]


COLUMNS = (
    Column("#", "rank", lambda e: _text(e.rank)),
    Column("guard", "guard", lambda e: e.guard),
    Column("T", "temperature", lambda e: f"{e.temperature:g}"),
    Column("+", "rescued vs none", lambda e: _text(None if e.paired is None else e.paired.rescues)),
    Column(
        "-",
        "regressions vs none",
        lambda e: _text(None if e.paired is None else e.paired.regressions),
    ),
    Column("p", "McNemar p", lambda e: "–" if e.paired is None else f"{e.paired.mcnemar_p:.2g}"),
    Column("cut", "cut rate", lambda e: _rate(e.summary.cut_rate.value)),
    Column("loop", "loop rate", lambda e: _rate(e.summary.loop_rate.value)),
    Column("acc", "accuracy", lambda e: _rate(e.summary.accuracy.value)),
    Column("len", "mean length", lambda e: _decimal(e.summary.mean_length)),
    Column("n", "n", lambda e: str(e.summary.n)),
    Column("resc", "rescues done", lambda e: str(e.rescues_performed)),
    Column("tok/s", "tokens/s", lambda e: _decimal(e.tokens_per_s)),
)

# An 80-column terminal has no room for n (the table's title gives it) or the rescues performed.
TERMINAL_COLUMNS = tuple(column for column in COLUMNS if column.short not in ("n", "resc"))


def by_rank(entries: Sequence[GuardEntry]) -> list[GuardEntry]:
    """Entries by temperature, then their stored rank (an entry without one keeps its place)."""
    return sorted(entries, key=lambda e: (e.temperature, e.rank or 0))


def write_compare_report(path: Path, result: CompareResult) -> None:
    entries = by_rank(result.entries)
    head = "".join(f"<th>{escape(column.header)}</th>" for column in COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(column.cell(e))}</td>" for column in COLUMNS) + "</tr>"
        for e in entries
    )
    temperatures = list(result.temperatures)
    guards = list(dict.fromkeys(e.guard for e in entries))

    def series(rate: Callable[[GuardEntry], float | None]) -> list[Series]:
        by_key = {(e.guard, e.temperature): rate(e) for e in entries}
        return [
            Series(
                guard, [by_key.get((guard, t)) for t in temperatures], [None] * len(temperatures)
            )
            for guard in guards
        ]

    charts = "".join(
        rate_chart(title, temperatures, series(rate))
        for title, rate in (
            ("loop rate", lambda e: e.summary.loop_rate.value),
            ("accuracy", lambda e: e.summary.accuracy.value),
        )
    )
    html = page(
        f"loopfix compare: {result.model} on {result.suite}",
        f"{result.rescues_and_regressions}; {result.ranking}",
        [
            "".join(f"<p>{escape(note)}</p>" for note in result.notes),
            f"<table><tr>{head}</tr>{rows}</table>",
            f"<div class=charts>{charts}</div>",
        ],
    )
    write_text_atomic(path, html)

"""`report.html` of a guard comparison: the table, and loop rate / accuracy per guard.

The table leads with answers: each guard's rank at its temperature, the samples it rescued and
the regressions it caused against "none" and McNemar's exact p, then cut and loop rates, and
its rows come in rank order (the ranking, `answers_first`, is computed by
`loopfix.scan.guard_comparison` and stored as each entry's `rank`).
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from loopfix.atomic import write_text_atomic
from loopfix.report.page import page
from loopfix.report.svg import Series, rate_chart

__all__ = ["COLUMNS", "TERMINAL_COLUMNS", "by_rank", "write_compare_report"]

# (summary key, short header for a terminal, full header)
COLUMNS = (
    ("rank", "#", "rank"),
    ("guard", "guard", "guard"),
    ("temperature", "T", "temperature"),
    ("rescued_samples", "+", "rescued vs none"),
    ("regressions", "-", "regressions vs none"),
    ("mcnemar_p", "p", "McNemar p"),
    ("cut_rate", "cut", "cut rate"),
    ("loop_rate", "loop", "loop rate"),
    ("accuracy", "acc", "accuracy"),
    ("mean_length", "len", "mean length"),
    ("n", "n", "n"),
    ("rescues", "resc", "rescues done"),
    ("tokens_per_s", "tok/s", "tokens/s"),
)

# An 80-column terminal has no room for n (the table's title gives it) or the rescues performed.
TERMINAL_COLUMNS = tuple(column for column in COLUMNS if column[0] not in ("n", "rescues"))


def by_rank(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries by temperature, then their stored rank (an entry without one keeps its place)."""
    return sorted(
        entries,
        key=lambda e: (e["temperature"], e.get("rank") if e.get("rank") is not None else 0),
    )


def cell(key: str, value: Any) -> str:
    """One table cell; "–" for a value that is missing or None."""
    if value is None:
        return "–"
    if key in ("loop_rate", "cut_rate", "accuracy"):
        return f"{value:.1%}"
    if key == "mcnemar_p":
        return f"{value:.2g}"
    if isinstance(value, float):
        return f"{value:.1f}" if key != "temperature" else f"{value:g}"
    return str(value)


def write_compare_report(path: Path, summary: dict[str, Any]) -> None:
    entries = by_rank(summary["entries"])
    head = "".join(f"<th>{escape(label)}</th>" for _, _, label in COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(cell(k, e.get(k)))}</td>" for k, _, _ in COLUMNS) + "</tr>"
        for e in entries
    )
    temperatures = summary["temperatures"]
    guards = list(dict.fromkeys(e["guard"] for e in entries))

    def series(metric: str) -> list[Series]:
        by_key = {(e["guard"], e["temperature"]): e[metric] for e in entries}
        return [
            Series(
                guard, [by_key.get((guard, t)) for t in temperatures], [None] * len(temperatures)
            )
            for guard in guards
        ]

    charts = "".join(
        rate_chart(title, temperatures, series(metric))
        for title, metric in (("loop rate", "loop_rate"), ("accuracy", "accuracy"))
    )
    html = page(
        f"loopfix compare: {summary['model']} on {summary['suite']}",
        f"{summary['rescues_and_regressions']}; {summary.get('ranking', '')}",
        [
            "".join(f"<p>{escape(note)}</p>" for note in summary["notes"]),
            f"<table><tr>{head}</tr>{rows}</table>",
            f"<div class=charts>{charts}</div>",
        ],
    )
    write_text_atomic(path, html)

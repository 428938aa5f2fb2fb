"""`report.html` of a guard comparison: the table, and loop rate / accuracy per guard."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from loopfix.atomic import write_text_atomic
from loopfix.report.page import page
from loopfix.report.svg import Series, rate_chart

__all__ = ["COLUMNS", "write_compare_report"]

# (summary key, short header for a terminal, full header)
COLUMNS = (
    ("guard", "guard", "guard"),
    ("temperature", "T", "temperature"),
    ("n", "n", "n"),
    ("loop_rate", "loop", "loop rate"),
    ("cut_rate", "cut", "cut rate"),
    ("accuracy", "acc", "accuracy"),
    ("mean_length", "len", "mean length"),
    ("rescues", "resc", "rescues done"),
    ("rescued_samples", "+", "rescued vs none"),
    ("regressions", "-", "regressions vs none"),
    ("tokens_per_s", "tok/s", "tokens/s"),
)


def cell(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if key in ("loop_rate", "cut_rate", "accuracy"):
        return f"{value:.1%}"
    if isinstance(value, float):
        return f"{value:.1f}" if key != "temperature" else f"{value:g}"
    return str(value)


def write_compare_report(path: Path, summary: dict[str, Any]) -> None:
    entries = summary["entries"]
    head = "".join(f"<th>{escape(label)}</th>" for _, _, label in COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(cell(k, e[k]))}</td>" for k, _, _ in COLUMNS) + "</tr>"
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
        summary["rescues_and_regressions"],
        [
            "".join(f"<p>{escape(note)}</p>" for note in summary["notes"]),
            f"<table><tr>{head}</tr>{rows}</table>",
            f"<div class=charts>{charts}</div>",
        ],
    )
    write_text_atomic(path, html)

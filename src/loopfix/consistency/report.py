"""`consistency.json` and `report.html` (self-contained: the scan report's style, inline SVG)."""

from __future__ import annotations

import json
from dataclasses import asdict
from html import escape
from pathlib import Path

from loopfix.atomic import write_text_atomic
from loopfix.consistency.result import (
    CheckResult,
    ConsistencyResult,
    Divergence,
    SeedRow,
    TokenProbability,
)
from loopfix.report.page import STYLE
from loopfix.report.svg import Series, rate_chart

__all__ = ["MAX_DIVERGENCE_ROWS", "render_consistency", "write_consistency"]

MAX_DIVERGENCE_ROWS = 40
_COLORS = {"pass": "#2ca02c", "warn": "#ff7f0e", "fail": "#d62728", "skipped": "#888"}


def _token(token: TokenProbability | None) -> str:
    if token is None:
        return "(ended)"
    return (
        f"{escape(repr(token.text))} <span class=small>#{token.id} p={token.probability:.3f}</span>"
    )


def _divergence_rows(divergences: list[Divergence]) -> str:
    if not divergences:
        return ""
    head = (
        "prompt",
        "runs",
        "position",
        "token a",
        "token b",
        "top-5 (reference)",
        "top-2 gap",
        "near-tie",
    )
    lines = ["<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for d in divergences[:MAX_DIVERGENCE_ROWS]:
        top = "<br>".join(_token(t) for t in d.top)
        cells = (
            escape(d.prompt_id),
            f"{escape(d.a)}<br>vs {escape(d.b)}",
            str(d.position),
            _token(d.token_a),
            _token(d.token_b),
            top,
            f"{d.gap:.3f}",
            "yes" if d.near_tie else "no",
        )
        lines.append("<tr>" + "".join(f"<td class=text>{c}</td>" for c in cells) + "</tr>")
    if len(divergences) > MAX_DIVERGENCE_ROWS:
        more = len(divergences) - MAX_DIVERGENCE_ROWS
        lines.append(f"<tr><td colspan={len(head)}>… {more} more in consistency.json</td></tr>")
    return "\n".join(lines + ["</table>"])


def _seed_chart(check: CheckResult) -> str:
    found = check.numbers.get("by_temperature")
    rows = [row for row in found if isinstance(row, SeedRow)] if isinstance(found, list) else []
    if not rows:
        return ""

    def series(label: str, values: list[float | None]) -> Series:
        return Series(label, values, [None] * len(rows))

    return rate_chart(
        "Across seeds, per temperature",
        [row.temperature for row in rows],
        [
            series("loop rate", [row.loop_rate for row in rows]),
            series("edit distance", [row.edit_distance for row in rows]),
            series("distinct-2", [row.distinct_2 for row in rows]),
        ],
    )


def _section(check: CheckResult) -> str:
    numbers = escape(json.dumps(check.to_dict()["numbers"], indent=1))
    chart = _seed_chart(check) if check.name == "seed_sensitivity" else ""
    return "\n".join(
        [
            f"<h2 id={check.name}>{check.name}: "
            f"<span style='color:{_COLORS[check.status]}'>{check.status}</span></h2>",
            f"<p>{escape(check.summary)}</p>",
            chart,
            f"<details><summary>numbers</summary><pre>{numbers}</pre></details>",
            _divergence_rows(check.divergences),
        ]
    )


def render_consistency(result: ConsistencyResult) -> str:
    title = f"loopfix consistency: {result.model} on {result.suite}"
    head = "<tr><th>check</th><th>status</th><th>summary</th><th>seconds</th></tr>"
    rows = "".join(
        f"<tr><td><a href=#{c.name}>{c.name}</a></td>"
        f"<td style='color:{_COLORS[c.status]}'>{c.status}</td>"
        f"<td class=text>{escape(c.summary)}</td><td>{c.seconds:.1f}</td></tr>"
        for c in result.checks
    )
    environment = ", ".join(f"{k} {v}" for k, v in asdict(result.environment).items())
    return "\n".join(
        [
            "<!DOCTYPE html>",
            "<html lang=en><head><meta charset=utf-8>",
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
            f"<h1>{escape(title)}</h1>",
            f"<p class=small>{result.prompts} prompts · {escape(environment)} · a divergence is "
            "the first position where two outputs differ; the top-5 are the reference model's "
            "probabilities there (teacher-forced, float32, batch 1)</p>",
            f"<table>{head}{rows}</table>",
            *(_section(check) for check in result.checks),
            "</body></html>",
        ]
    )


def write_consistency(
    result: ConsistencyResult, out: Path, json_path: Path | None = None
) -> dict[str, Path]:
    """Write OUT/consistency.json and OUT/report.html (and the JSON again at `json_path`)."""
    text = json.dumps(result.to_dict(), indent=1, ensure_ascii=False) + "\n"
    paths = {"json": out / "consistency.json", "html": out / "report.html"}
    write_text_atomic(paths["json"], text)
    write_text_atomic(paths["html"], render_consistency(result))
    if json_path is not None:
        write_text_atomic(json_path, text)
        paths["extra_json"] = json_path
    return paths

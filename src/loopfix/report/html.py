"""`report.html`: one self-contained page (inline CSS and SVG, no scripts, no network).

Sections: the per-setting table; loop/cut and accuracy against temperature with Wilson
intervals; length and loop-onset histograms; a per-prompt table whose example output has the
looping span highlighted. "Loop" is the scan's `is_loop` everywhere (cut at the cap in a
repetition, or stopped for repetition), which the scan passes in as `looping` (`report` sits
below `scan` and imports none of it: docs/architecture.md); a repetition the model left by
itself (`loop.looping` true, not cut) is counted apart, as the detector's flags, so that no
table mixes the two (docs/scan.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path

from loopfix.atomic import write_text_atomic
from loopfix.records import Sample
from loopfix.report.page import page
from loopfix.report.svg import Series, histogram_chart, rate_chart
from loopfix.summaries import Rate, ScanSummary, SettingSummary

__all__ = ["render_report", "write_report"]

MAX_PROMPT_ROWS = 200
MAX_TEXT_CHARS = 3000


def _percent(rate: Rate) -> str:
    if rate.value is None:
        return "–"
    if rate.ci95 is None:
        return f"{rate.value:.1%}"
    low, high = rate.ci95
    return f"{rate.value:.1%} <span class=small>[{low:.1%}, {high:.1%}]</span>"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _settings_table(rows: Sequence[SettingSummary]) -> str:
    head = (
        "temperature",
        "n",
        "loop rate (loops)",
        "detector flags (loop.looping)",
        "paper loop rate (n, k)",
        "cut rate",
        "accuracy",
        "accuracy (non-looping)",
        "mean length",
        "median length",
        "p90 length",
        "over-long",
    )
    lines = ["<table id=settings><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for row in rows:
        n, k = row.paper_ngram
        cells = (
            f"{row.temperature:g}",
            str(row.n),
            f"{_percent(row.loop_rate)} ({row.loops})",
            str(row.detector_looping),
            f"{_percent(row.paper_loop_rate)} ({n}, {k})",
            _percent(row.cut_rate),
            _percent(row.accuracy),
            _percent(row.accuracy_non_looping),
            _number(row.mean_length),
            _number(row.median_length),
            _number(row.p90_length),
            str(row.overlong),
        )
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "\n".join(lines + ["</table>"])


def _charts(
    rows: Sequence[SettingSummary], records: list[Sample], looping: Callable[[Sample], bool]
) -> str:
    temperatures = [row.temperature for row in rows]

    def series(label: str, rate: Callable[[SettingSummary], Rate]) -> Series:
        return Series(label, [rate(r).value for r in rows], [rate(r).ci95 for r in rows])

    generated = [s for s in records if s.finish_reason != "error"]
    # a server's repetition stop is a loop even where the detector placed none
    placed = [s.loop.onset if s.loop else None for s in generated if looping(s)]
    onsets = [onset for onset in placed if onset is not None]
    charts = [
        rate_chart(
            "Loops and cuts vs temperature",
            temperatures,
            [
                series("loop rate", lambda r: r.loop_rate),
                series("paper metric", lambda r: r.paper_loop_rate),
                series("cut rate", lambda r: r.cut_rate),
            ],
        ),
        rate_chart(
            "Accuracy vs temperature",
            temperatures,
            [
                series("accuracy", lambda r: r.accuracy),
                series("non-looping", lambda r: r.accuracy_non_looping),
            ],
        ),
        histogram_chart(
            "Output length", [s.length for s in generated if s.length is not None], "tokens"
        ),
        histogram_chart("Loop onset", onsets, "token position where the loop starts"),
    ]
    return "<div class=charts>" + "\n".join(charts) + "</div>"


def _highlighted(sample: Sample) -> str:
    text = sample.text[:MAX_TEXT_CHARS]
    more = "…" if len(sample.text) > MAX_TEXT_CHARS else ""
    span = sample.meta.get("loop_chars")
    if not span:
        return escape(text) + more
    start, end = min(span[0], len(text)), min(span[1], len(text))
    return f"{escape(text[:start])}<mark>{escape(text[start:end])}</mark>{escape(text[end:])}{more}"


def _prompt_rows(
    records: list[Sample], temperatures: list[float], looping: Callable[[Sample], bool]
) -> str:
    by_prompt: dict[str, list[Sample]] = {}
    for sample in records:
        by_prompt.setdefault(sample.prompt_id, []).append(sample)

    # Prompts that loop most come first: they are what a reader came for.
    order = sorted(by_prompt, key=lambda p: -sum(map(looping, by_prompt[p])))
    head = ["prompt"] + [f"T={t:g} loops · correct" for t in temperatures] + ["example output"]
    lines = ["<table id=prompts><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for prompt_id in order[:MAX_PROMPT_ROWS]:
        samples = by_prompt[prompt_id]
        cells = [escape(prompt_id)]
        for temperature in temperatures:
            group = [s for s in samples if s.settings["temperature"] == temperature]
            judged = [s for s in group if s.correct is not None]
            cells.append(
                f"{sum(map(looping, group))}/{len(group)} · "
                f"{sum(bool(s.correct) for s in judged)}/{len(judged)}"
            )
        example = next((s for s in samples if looping(s)), samples[0])
        label = f"T={example.settings['temperature']:g} #{example.sample_index}, "
        length = "?" if example.length is None else example.length
        label += f"{example.finish_reason}, {length} tokens"
        cells.append(f"<span class=small>{escape(label)}</span>\n{_highlighted(example)}")
        row = "".join(
            f"<td class=text>{c}</td>" if i == len(cells) - 1 else f"<td>{c}</td>"
            for i, c in enumerate(cells)
        )
        lines.append(f"<tr>{row}</tr>")
    if len(order) > MAX_PROMPT_ROWS:
        lines.append(f"<tr><td colspan={len(head)}>… {len(order) - MAX_PROMPT_ROWS} more</td></tr>")
    return "\n".join(lines + ["</table>"])


def render_report(
    summary: ScanSummary, records: list[Sample], looping: Callable[[Sample], bool]
) -> str:
    """The page of a scan; `looping` says which records are loops (the scan's `is_loop`)."""
    rows = summary.settings
    config = summary.config or {}
    title = f"loopfix scan: {config.get('model', '')} on {config.get('suite', '')}"
    overlong = summary.overlong_prompts
    notes = (
        f"<p>{len(overlong)} over-long prompt(s) flagged, not generated: "
        + escape(", ".join(overlong[:20]))
        + "</p>"
        if overlong
        else ""
    ) + "".join(f"<p>warning: {escape(w)}</p>" for w in summary.warnings)
    notes += "".join(f"<p>{escape(note)}</p>" for note in summary.notes)
    about = (
        f"{summary.records} records · loop = cut at the token cap while the default detector "
        "finds a loop, or stopped for repetition; detector flags = the detector's verdict "
        "(loop.looping), repetitions the model left by itself included; paper metric = some "
        "n-gram occurs at least k times, n and k scaled for short caps"
    )
    return page(
        title,
        about,
        [
            notes,
            _settings_table(rows),
            _charts(rows, records, looping),
            "<h2>Per prompt</h2>",
            _prompt_rows(records, [r.temperature for r in rows], looping),
        ],
    )


def write_report(
    path: Path, summary: ScanSummary, records: list[Sample], looping: Callable[[Sample], bool]
) -> None:
    write_text_atomic(path, render_report(summary, records, looping))

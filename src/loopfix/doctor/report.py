"""The doctor's `report.md` (for a person) and `report.html` (one self-contained page: loop and
cut rate by temperature, length histogram per temperature, the guard table, the repair and the
recommendation; inline SVG, no scripts)."""

from __future__ import annotations

from html import escape

from loopfix.doctor.config import CONSISTENCY_DIR
from loopfix.doctor.result import DoctorResult
from loopfix.report.guard_comparison import COLUMNS
from loopfix.report.svg import Series, histogram_chart, rate_chart
from loopfix.scan.guard_comparison import ranked
from loopfix.summaries import SettingSummary

__all__ = ["render_html", "render_markdown"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;background:#fff}
table{border-collapse:collapse;margin:12px 0;font-size:13px}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
.charts{display:flex;flex-wrap:wrap;gap:16px}
.small{color:#666;font-size:12px}
"""
_DEFINITIONS = (
    "A loop is a repetition the output never left: cut at the length cap with a loop the "
    "detector finds, or stopped for repetition. The cut rate counts every output that hit the "
    "cap; the paper metric (some n-gram occurs k times, scaled for the cap) is shown beside "
    "them (docs/metrics.md)."
)


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _measure_rows(settings: tuple[SettingSummary, ...]) -> list[list[str]]:
    return [
        [
            f"{s.temperature:g}",
            str(s.n),
            _rate(s.loop_rate.value),
            _rate(s.cut_rate.value),
            _rate(s.paper_loop_rate.value),
            _rate(s.accuracy.value),
            "–" if s.mean_length is None else f"{s.mean_length:.1f}",
            "; ".join(
                [
                    ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.outcomes.items() if v),
                    *([] if s.thinking is None else [s.thinking.line()]),
                ]
            ),
        ]
        for s in settings
    ]


_MEASURE_HEAD = [
    "T",
    "n",
    "loop rate",
    "cut rate",
    "paper metric",
    "accuracy",
    "mean length",
    "outcomes",
]


def _repair_text(result: DoctorResult) -> str:
    repair = result.repair.result
    if repair is None:
        return f"Skipped: {result.repair.skipped}."
    details = f"Details: {repair.verify_json}."
    if repair.decision is None:  # stopped at screening: the verdict says why, no arm verified
        return f"{repair.verdict.rstrip('.')}. {details}"
    decision = repair.decision
    primary = decision.primary
    text = (
        f"{repair.verdict.rstrip('.')}. At T={repair.temperature:g} on {repair.n} "
        "held-out prompts: loops "
        f"{_rate(primary.base.loop_rate)} -> {_rate(primary.patched.loop_rate)} patched "
        f"(norm-matched random control {_rate(primary.random_control.loop_rate)}); accuracy "
        f"{_rate(primary.base.accuracy)} -> {_rate(primary.patched.accuracy)}; KL "
        f"{decision.kl:.4f} nats/token; {repair.touched_fraction:.2%} of the weights touched. "
        f"{details}"
    )
    if repair.accepted:
        text += (
            f" Apply with `loopfix patch apply {result.model} {repair.folder} --out PATCHED`; "
            "`loopfix patch revert` undoes it bit for bit."
        )
    return text


def _combined_text(result: DoctorResult) -> str:
    stage = result.combined
    if stage.skipped is not None:
        return f"Skipped: {stage.skipped}."
    rows = "; ".join(
        f"{row.arm}: {row.against_base.rescues} answers recovered, "
        f"{row.against_base.regressions} lost (p {row.against_base.mcnemar_p:.2g}), loops "
        f"{_rate(row.entry.summary.loop_rate.value)}, cut "
        f"{_rate(row.entry.summary.cut_rate.value)}, accuracy "
        f"{_rate(row.entry.summary.accuracy.value)}, mean length "
        f"{row.entry.summary.mean_length:.1f}; against `{row.entry.guard}` without the patch "
        f"{row.against_guard.rescues} recovered, {row.against_guard.regressions} "
        f"lost (p {row.against_guard.mcnemar_p:.2g})"
        for row in stage.rows
    )
    return (
        f"At T={stage.temperature:g} on the guard stage's prompts, against the unpatched model "
        f"without a guard: {rows}. Runs: {stage.folder}."
    )


def _consistency_text(result: DoctorResult) -> str:
    stage = result.consistency
    if stage.skipped is not None:
        return f"Skipped: {stage.skipped}."
    checks = ", ".join(f"{name} {status}" for name, status in stage.statuses.items())
    return f"{checks}. Details: {stage.report}."


def _consistency_html(result: DoctorResult) -> str:
    stage = result.consistency
    if stage.skipped is not None or stage.report is None:
        return f"<p id=consistency>{escape(_consistency_text(result))}</p>"
    checks = ", ".join(
        f"{escape(name)} {escape(status)}" for name, status in stage.statuses.items()
    )
    link = f"{CONSISTENCY_DIR}/report.html"  # beside this report, wherever OUT has moved
    return f'<p id=consistency>{checks}. <a href="{link}">The consistency report</a>.</p>'


def _stage_line(result: DoctorResult) -> str:
    return ", ".join(
        f"{name} {cost.seconds:.1f} s (peak {cost.peak_rss_mib:.0f} MiB)"
        for name, cost in result.stages.items()
    )


def render_markdown(result: DoctorResult) -> str:
    measure, guards, advice = result.measure, result.guards, result.recommendation
    lines = [
        f"# loopfix doctor: {result.model}",
        "",
        f"Suite `{measure.suite}`, {measure.settings[0].n + measure.settings[0].overlong} "
        f"prompts per temperature, cap {measure.max_new_tokens} tokens, measured on "
        f"{measure.backend}{f' in {measure.dtype}' if measure.dtype else ''}. {_DEFINITIONS}",
        "",
        "## Recommendation",
        "",
        f"**T={advice.temperature:g}, guard `{advice.guard}`.** {advice.reason}.",
        "",
        "## Measure",
        "",
        "| " + " | ".join(_MEASURE_HEAD) + " |",
        "|" + "---:|" * (len(_MEASURE_HEAD) - 1) + "---|",
        *("| " + " | ".join(row) + " |" for row in _measure_rows(measure.settings)),
        "",
    ]
    if measure.loops == 0:
        lines += ["No sample looped at any temperature: this model needs no loop fix here.", ""]
    lines += ["## Guards", ""]
    if guards.skipped is not None:
        lines += [f"Skipped: {guards.skipped}.", ""]
    else:
        head = [column.header for column in COLUMNS]
        lines += [
            f"At T={guards.temperature:g} (the loopiest temperature), paired against `none`, "
            "ranked by answers recovered (rescues minus regressions; a significant loss last), "
            "then cut rate, loop rate and tokens:",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
            *(
                "| " + " | ".join(column.cell(entry) for column in COLUMNS) + " |"
                for entry in ranked(guards.entries)
            ),
            "",
        ]
    lines += ["## Repair and verification", "", _repair_text(result), ""]
    lines += ["## Patch + guard", "", _combined_text(result), ""]
    lines += ["## Consistency", "", _consistency_text(result), ""]
    lines += ["## Stages", "", _stage_line(result) + ".", ""]
    return "\n".join(lines)


def _table(head: list[str], rows: list[list[str]], table_id: str) -> str:
    cells = "".join(
        "<tr>" + "".join(f"<td>{escape(value)}</td>" for value in row) + "</tr>" for row in rows
    )
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f"<table id={table_id}><tr>{header}</tr>{cells}</table>"


def _charts(result: DoctorResult) -> str:
    settings = result.measure.settings
    temperatures = [s.temperature for s in settings]
    charts = [
        rate_chart(
            "Loops and cuts vs temperature",
            temperatures,
            [
                Series(
                    "loop rate",
                    [s.loop_rate.value for s in settings],
                    [s.loop_rate.ci95 for s in settings],
                ),
                Series(
                    "cut rate",
                    [s.cut_rate.value for s in settings],
                    [s.cut_rate.ci95 for s in settings],
                ),
                Series(
                    "paper metric",
                    [s.paper_loop_rate.value for s in settings],
                    [None] * len(settings),
                ),
                Series(
                    "accuracy",
                    [s.accuracy.value for s in settings],
                    [s.accuracy.ci95 for s in settings],
                ),
            ],
        )
    ]
    for temperature in temperatures:
        lengths = result.measure.lengths.get(temperature, ())
        charts.append(histogram_chart(f"Output length at T={temperature:g}", lengths, "tokens"))
    return "<div class=charts>" + "\n".join(charts) + "</div>"


def render_html(result: DoctorResult) -> str:
    guards, advice = result.guards, result.recommendation
    if guards.skipped is not None:
        guard_html = f"<p>Skipped: {escape(guards.skipped)}.</p>"
    else:
        guard_html = (
            f"<p>At T={guards.temperature:g} (the loopiest temperature), paired against none, "
            "ranked by answers recovered (rescues minus regressions; a significant loss last), "
            "then cut rate, loop rate and tokens.</p>"
        ) + _table(
            [column.header for column in COLUMNS],
            [[column.cell(entry) for column in COLUMNS] for entry in ranked(guards.entries)],
            "guards",
        )
    title = f"loopfix doctor: {result.model}"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            "<html lang=en><head><meta charset=utf-8>",
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
            f"<h1>{escape(title)}</h1>",
            f"<p class=small>suite {escape(result.measure.suite)} · cap "
            f"{result.measure.max_new_tokens} tokens · loopfix {escape(result.versions['loopfix'])}"
            f" · {escape(_DEFINITIONS)}</p>",
            "<h2>Recommendation</h2>",
            f"<p id=recommendation><b>T={advice.temperature:g}, guard {escape(advice.guard)}.</b> "
            f"{escape(advice.reason)}.</p>",
            "<h2>Measure</h2>",
            _table(_MEASURE_HEAD, _measure_rows(result.measure.settings), "measure"),
            _charts(result),
            "<h2>Guards</h2>",
            guard_html,
            "<h2>Repair and verification</h2>",
            f"<p id=repair>{escape(_repair_text(result))}</p>",
            "<h2>Patch + guard</h2>",
            f"<p id=combined>{escape(_combined_text(result))}</p>",
            "<h2>Consistency</h2>",
            _consistency_html(result),
            "<h2>Stages</h2>",
            f"<p id=stages>{escape(_stage_line(result))}</p>",
            "</body></html>",
        ]
    )

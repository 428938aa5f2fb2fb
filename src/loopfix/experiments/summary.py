"""An experiment's numbers over training seeds: per arm, metric and temperature the mean with
its 95% Student-t interval, and the paired difference to the baseline arm (same seed) with the
paired t-test's p; as JSON, a Markdown table and an SVG plot.

The metrics come from each model's `scan.testbed` evaluation (the one loop definition) and its
training record. Per temperature: loop rate, success, cut rate, consecutive-repeat rate (of the
pairs of consecutive root decisions within a walk, the share that enter the same arm again;
pooled over a model's walks) and mean length. Per model: the flywheel (teacher-forced
P(repeat the wrong excursion again) after the first and the sixth verbatim repeat) and the
training compute (non-pad tokens processed, 6 x parameters x tokens FLOPs, wall seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from pydantic import BaseModel, ConfigDict

from loopfix.report.svg import HEIGHT, WIDTH, Series, rate_chart
from loopfix.scan.stats import MeanInterval, PairedTest, mean_interval, paired_t_test

__all__ = ["Cell", "ExperimentSummary", "RunNumbers", "plot_svg", "summarise", "table_markdown"]


class _Read(BaseModel):
    # A reader of the fields it names; the file holds more (kept there, not read here).
    model_config = ConfigDict(frozen=True)


class SettingNumbers(_Read):
    """One temperature's row of a testbed evaluation (`scan.testbed.TemperatureResult`)."""

    temperature: float
    n: int
    loop_rate: float
    success: float
    cut_rate: float
    repeat_choice_rate: float | None  # None: no consecutive root-decision pair
    mean_length: float
    outcomes: dict[str, int]  # each walk's one outcome (`scan.outcomes.STARGRAPH_OUTCOMES`)


class EvaluationNumbers(_Read):
    settings: list[SettingNumbers]
    flywheel: list[float]


class TrainingCost(_Read):
    """Of `lab.train`'s record: the compute a model took."""

    train_tokens: float
    train_flops: float
    train_seconds: float


class RunNumbers(_Read):
    """What the summary reads of one (arm, seed)'s result.json."""

    training: TrainingCost
    evaluation: EvaluationNumbers


# metric -> (table header, is a rate, its value in a temperature's row)
PER_TEMPERATURE: dict[str, tuple[str, bool, Callable[[SettingNumbers], float | None]]] = {
    "loop_rate": ("loop", True, lambda s: s.loop_rate),
    "success": ("success", True, lambda s: s.success),
    "cut_rate": ("cut", True, lambda s: s.cut_rate),
    # A student still guessing which moves are legal has not learned the task: its loops are
    # not the claims' loops (docs/training.md).
    "illegal_rate": ("illegal move", True, lambda s: s.outcomes["illegal"] / s.n),
    "repeat_choice_rate": ("consecutive repeat", True, lambda s: s.repeat_choice_rate),
    "mean_length": ("mean length", False, lambda s: s.mean_length),
}
PER_MODEL: dict[str, tuple[str, Callable[[RunNumbers], float]]] = {
    "flywheel_first": ("flywheel P(repeat) after 1", lambda r: r.evaluation.flywheel[0]),
    "flywheel_last": ("after 6", lambda r: r.evaluation.flywheel[-1]),
    "train_tokens": ("train tokens", lambda r: r.training.train_tokens),
    "train_flops": ("train FLOPs", lambda r: r.training.train_flops),
    "train_seconds": ("train seconds", lambda r: r.training.train_seconds),
}
PLOTTED = ("loop_rate", "repeat_choice_rate")


@dataclass(frozen=True)
class Cell:
    """One arm's metric (at one temperature, or None for a per-model metric) over seeds."""

    arm: str
    metric: str
    temperature: float | None
    values: list[float | None]  # by seed; None where undefined (no root-decision pair)
    summary: MeanInterval | None  # None when no seed has a value
    versus_baseline: PairedTest | None  # None for the baseline itself


@dataclass(frozen=True)
class ExperimentSummary:
    name: str
    claim: str
    setting: str  # the graph, steps and evaluation size, in words
    arms: list[str]  # the baseline first
    seeds: int
    temperatures: list[float]
    cells: list[Cell]

    def cell(self, arm: str, metric: str, temperature: float | None = None) -> Cell:
        return next(
            c for c in self.cells if (c.arm, c.metric, c.temperature) == (arm, metric, temperature)
        )

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _temperature_value(record: RunNumbers, metric: str, temperature: float) -> float | None:
    setting = next(s for s in record.evaluation.settings if s.temperature == temperature)
    return PER_TEMPERATURE[metric][2](setting)


def _cell(
    arm: str,
    metric: str,
    temperature: float | None,
    values: list[float | None],
    baseline: list[float | None] | None,
) -> Cell:
    present = [v for v in values if v is not None]
    test = None
    if baseline is not None:
        pairs = [(v, b) for v, b in zip(values, baseline, strict=True) if None not in (v, b)]
        if pairs:
            test = paired_t_test([v for v, _ in pairs], [b for _, b in pairs])  # type: ignore[misc]
    return Cell(arm, metric, temperature, values, mean_interval(present) if present else None, test)


def summarise(
    name: str,
    claim: str,
    setting: str,
    records: dict[str, list[RunNumbers]],
    temperatures: Sequence[float],
) -> ExperimentSummary:
    """`records`: arm -> one run record per seed, in seed order; the first arm is the baseline."""
    arms = list(records)
    series: dict[tuple[str, str, float | None], list[float | None]] = {}
    for arm, runs in records.items():
        for metric in PER_TEMPERATURE:
            for t in temperatures:
                series[arm, metric, t] = [_temperature_value(r, metric, t) for r in runs]
        for metric, (_, read) in PER_MODEL.items():
            series[arm, metric, None] = [read(r) for r in runs]
    cells = [
        _cell(
            arm,
            metric,
            t,
            values,
            None if arm == arms[0] else series[arms[0], metric, t],
        )
        for (arm, metric, t), values in series.items()
    ]
    seeds = len(records[arms[0]])
    return ExperimentSummary(name, claim, setting, arms, seeds, list(temperatures), cells)


def _number(value: float, rate: bool) -> str:
    return f"{100 * value:.1f}" if rate else f"{value:.3g}"


def _cell_text(cell: Cell, rate: bool) -> str:
    if cell.summary is None:
        return "n/a"
    text = _number(cell.summary.mean, rate) + ("%" if rate else "")
    if cell.summary.low is not None and cell.summary.high is not None:
        text += f" [{_number(cell.summary.low, rate)}, {_number(cell.summary.high, rate)}]"
    test = cell.versus_baseline
    if test is not None:
        sign = "+" if test.difference.mean >= 0 else ""
        p = "" if test.p is None else f", p {test.p:.2g}"
        text += f"; Δ {sign}{_number(test.difference.mean, rate)}{p}"
    return text


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def table_markdown(summary: ExperimentSummary) -> str:
    baseline = summary.arms[0]
    lines = [
        f"# {summary.name}: {summary.claim}",
        "",
        f"{summary.setting}; {summary.seeds} training seeds per arm. Each cell: the mean over "
        f"seeds [95% Student-t interval]; Δ: the mean paired difference to the baseline "
        f"({baseline}) over seeds (percentage points for rates), p: the two-sided paired "
        "t-test over seeds.",
    ]
    columns = list(PER_TEMPERATURE.items())
    for t in summary.temperatures:
        lines += ["", f"## T = {t:g}", ""]
        rows = [
            [arm + (" (baseline)" if arm == baseline else "")]
            + [_cell_text(summary.cell(arm, m, t), rate) for m, (_, rate, _) in columns]
            for arm in summary.arms
        ]
        lines += _table(["arm", *(h for h, _, _ in PER_TEMPERATURE.values())], rows)
    lines += ["", "## Per model: flywheel and training compute", ""]
    rows = [
        [arm] + [_cell_text(summary.cell(arm, m), m.startswith("flywheel")) for m in PER_MODEL]
        for arm in summary.arms
    ]
    lines += _table(["arm", *(h for h, _ in PER_MODEL.values())], rows)
    return "\n".join(lines) + "\n"


def _chart(summary: ExperimentSummary, metric: str) -> str:
    series = []
    for arm in summary.arms:
        cells = [summary.cell(arm, metric, t).summary for t in summary.temperatures]
        series.append(
            Series(
                arm,
                [None if c is None else c.mean for c in cells],
                [
                    None
                    if c is None or c.low is None or c.high is None
                    else (max(0.0, c.low), min(1.0, c.high))
                    for c in cells
                ],
            )
        )
    title = f"{summary.name}: {PER_TEMPERATURE[metric][0]} rate"
    return rate_chart(title, summary.temperatures, series, "95% t interval over seeds")


def plot_svg(summary: ExperimentSummary) -> str:
    """The loop rate and the consecutive-repeat rate against temperature, one line per arm,
    stacked in one SVG."""
    charts = [_chart(summary, metric) for metric in PLOTTED]
    body = [
        f'<g transform="translate(0 {index * HEIGHT})">{chart}</g>'
        for index, chart in enumerate(charts)
    ]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT * len(charts)}">'
        + "".join(body)
        + "</svg>\n"
    )

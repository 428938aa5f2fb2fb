"""Inline SVG charts (no scripts, no network): rates against temperature with interval bars,
and histograms."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Series", "histogram_chart", "rate_chart"]

WIDTH, HEIGHT = 520, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 28, 44
# Ten colours (matplotlib's tab10) and eight marker shapes: series i gets colour i % 10 and
# shape i % 8, so every pair of the first 40 series differs in colour or shape, and the first 8
# in both (a reader who cannot tell two colours apart still tells the shapes).
COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
MARKERS = ("circle", "square", "triangle", "diamond", "down", "cross", "plus", "pentagon")
DODGE = 4.0  # pixels between the series' points at one x, so equal values do not hide each other


@dataclass(frozen=True)
class Series:
    """One line: a value (or None) and an interval (or None) per x position."""

    label: str
    values: Sequence[float | None]
    intervals: Sequence[Sequence[float] | None]


def series_style(number: int) -> tuple[str, str]:
    """(colour, marker shape) of the `number`-th series."""
    return COLORS[number % len(COLORS)], MARKERS[number % len(MARKERS)]


def marker(shape: str, x: float, y: float, color: str, title: str = "", size: float = 4.5) -> str:
    """One point drawn as `shape` (see MARKERS), with a hover title."""
    s = size
    outlines = {
        "triangle": [(0, -s), (s, s * 0.8), (-s, s * 0.8)],
        "down": [(0, s), (s, -s * 0.8), (-s, -s * 0.8)],
        "diamond": [(0, -s), (s, 0), (0, s), (-s, 0)],
        "square": [
            (-s * 0.8, -s * 0.8),
            (s * 0.8, -s * 0.8),
            (s * 0.8, s * 0.8),
            (-s * 0.8, s * 0.8),
        ],
        "pentagon": [
            (0, -s),
            (s * 0.95, -s * 0.3),
            (s * 0.6, s * 0.8),
            (-s * 0.6, s * 0.8),
            (-s * 0.95, -s * 0.3),
        ],
    }
    hover = f"<title>{escape(title)}</title>" if title else ""
    if shape in outlines:
        points = " ".join(f"{x + dx:.1f},{y + dy:.1f}" for dx, dy in outlines[shape])
        return f'<polygon points="{points}" fill="{color}">{hover}</polygon>'
    if shape in ("cross", "plus"):
        d = s * 0.85
        arms = (
            [(-d, -d, d, d), (-d, d, d, -d)] if shape == "cross" else [(-s, 0, s, 0), (0, -s, 0, s)]
        )
        path = " ".join(f"M{x + a:.1f},{y + b:.1f} L{x + c:.1f},{y + e:.1f}" for a, b, c, e in arms)
        return f'<path d="{path}" stroke="{color}" stroke-width="2.5">{hover}</path>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{s * 0.85:.1f}" fill="{color}">{hover}</circle>'


def _frame(title: str, body: list[str], x_label: str, y_label: str) -> str:
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
            f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>',
            f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="14" '
            f'font-weight="bold">{escape(title)}</text>',
            f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
            f'y2="{HEIGHT - BOTTOM}" stroke="#333"/>',
            f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>',
            f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle" '
            f'font-size="12">{escape(x_label)}</text>',
            f'<text x="14" y="{HEIGHT / 2}" text-anchor="middle" font-size="12" '
            f'transform="rotate(-90 14 {HEIGHT / 2})">{escape(y_label)}</text>',
            *body,
            "</svg>",
        ]
    )


def _y(value: float, top: float) -> float:
    return HEIGHT - BOTTOM - (value / top if top else 0) * (HEIGHT - TOP - BOTTOM)


def _y_ticks(top: float, as_percent: bool) -> list[str]:
    marks = []
    for step in range(5):
        value = top * step / 4
        label = f"{value:.0%}" if as_percent else f"{value:g}"
        y = _y(value, top)
        marks.append(
            f'<line x1="{LEFT - 4}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            f'stroke="#eee"/><text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" '
            f'font-size="10">{label}</text>'
        )
    return marks


def _no_data(title: str, x_label: str, y_label: str) -> str:
    body = [
        f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" '
        f'font-size="12" fill="#777">no data</text>'
    ]
    return _frame(title, body, x_label, y_label)


def rate_chart(
    title: str,
    xs: Sequence[float],
    series: Sequence[Series],
    interval_name: str = "95% Wilson interval",
) -> str:
    """Rates (0..1) against x (temperature), each point with its interval as a bar."""
    if not xs:
        return _no_data(title, "temperature", "rate")
    span = (max(xs) - min(xs)) or 1.0
    plot_width = WIDTH - LEFT - RIGHT - 120  # room for the legend on the right

    def x_of(x: float) -> float:
        return LEFT + 20 + (x - min(xs)) / span * (plot_width - 40)

    body = _y_ticks(1.0, as_percent=True)
    body += [
        f'<text x="{x_of(x):.1f}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle" '
        f'font-size="10">{x:g}</text>'
        for x in xs
    ]
    for number, line in enumerate(series):
        color, shape = series_style(number)
        shift = (number - (len(series) - 1) / 2) * DODGE
        points = [
            (x_of(x) + shift, _y(v, 1.0))
            for x, v in zip(xs, line.values, strict=True)
            if v is not None
        ]
        if len(points) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            body.append(
                f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>'
            )
        for x, value, interval in zip(xs, line.values, line.intervals, strict=True):
            if value is None:
                continue
            px = x_of(x) + shift
            if interval is not None:
                low, high = _y(interval[0], 1.0), _y(interval[1], 1.0)
                body.append(
                    f'<line x1="{px:.1f}" y1="{low:.1f}" x2="{px:.1f}" y2="{high:.1f}" '
                    f'stroke="{color}" stroke-width="1.5" opacity="0.6"/>'
                )
            body.append(
                marker(shape, px, _y(value, 1.0), color, f"{line.label} at {x:g}: {value:.1%}")
            )
        legend_y = TOP + 14 + 18 * number
        body.append(
            f'<line x1="{WIDTH - 134}" y1="{legend_y - 4}" x2="{WIDTH - 116}" y2="{legend_y - 4}" '
            f'stroke="{color}" stroke-width="2"/>'
            + marker(shape, WIDTH - 125, legend_y - 4, color)
            + f'<text x="{WIDTH - 110}" y="{legend_y}" font-size="11">{escape(line.label)}</text>'
        )
    with_intervals = any(i is not None for line in series for i in line.intervals)
    return _frame(
        title, body, "temperature", f"rate ({interval_name})" if with_intervals else "rate"
    )


def histogram_chart(title: str, values: Sequence[float], x_label: str, bins: int = 20) -> str:
    """Counts of `values` in equal-width bins (an empty chart says so)."""
    if not values:
        body = [
            f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" '
            f'font-size="12" fill="#777">no data</text>'
        ]
        return _frame(title, body, x_label, "samples")
    low, high = min(values), max(values)
    width = (high - low) / bins or 1.0
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, int((value - low) / width))] += 1
    top = max(counts)
    bar = (WIDTH - LEFT - RIGHT) / bins
    body = _y_ticks(float(top), as_percent=False)
    for index, count in enumerate(counts):
        y = _y(count, top)
        start = low + index * width
        body.append(
            f'<rect x="{LEFT + index * bar + 1:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" '
            f'height="{HEIGHT - BOTTOM - y:.1f}" fill="#1f77b4">'
            f"<title>{start:g}-{start + width:g}: {count}</title></rect>"
        )
    for value, anchor in ((low, LEFT), (high, WIDTH - RIGHT)):
        body.append(
            f'<text x="{anchor}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle" '
            f'font-size="10">{value:g}</text>'
        )
    return _frame(title, body, x_label, "samples")

"""Offline exact-periodic-tail check, with the same semantics as the online `LoopMonitor`.

For a period p, the run r_p is the number of trailing positions i with t[i] == t[i - p]; the last
r_p + p tokens are then p-periodic and the run's first token is the onset. The tail loops with
period p when r_p + p >= min_repeats * p and r_p + p >= min_span (`run_thresholds`); the
reported period is the smallest one that qualifies, which is the primitive unit of the loop.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from .config import DetectConfig
from .ids import as_ids
from .verdict import LoopVerdict, Span

_FIRST_WINDOW = 64


def run_thresholds(config: DetectConfig, periods: np.ndarray) -> np.ndarray:
    """The run r_p each period p needs: (min_repeats - 1) * p, and min_span - p."""
    return np.maximum((config.min_repeats - 1) * periods, config.min_span - periods)


def tail_verdict(end: int, period: int, run: int) -> LoopVerdict:
    """The verbatim verdict for a p-periodic run of `run` matches ending at token `end`."""
    onset = end - run - period
    return LoopVerdict(
        looping=True,
        kind="verbatim",
        onset=onset,
        period=period,
        repeats=(run + period) // period,
        span=Span(onset, end),
    )


def tail_period(ids: np.ndarray, max_period: int, thresholds: np.ndarray) -> tuple[int, int] | None:
    """The smallest period p <= max_period whose trailing run reaches `thresholds[p - 1]`, as
    (p, exact run), or None.

    Runs are measured on a window of the last w tokens for all periods at once; only the periods
    whose run fills the window and that could still be the answer are re-measured on a window four
    times larger. A loop costs O(P * 64 + its own length); a non-looping tail O(P * 64).
    """
    length = len(ids)
    count = min(max_period, length - 1)
    if count < 1:
        return None
    periods = np.arange(1, count + 1)
    needed = thresholds[:count]
    runs = np.zeros(count, dtype=np.int64)
    exact = np.zeros(count, dtype=bool)
    todo = np.arange(count)
    window = min(length, _FIRST_WINDOW)
    while todo.size:
        positions = np.arange(length - window, length)
        lagged = positions[None, :] - periods[todo, None]
        equal = (lagged >= 0) & (ids[positions][None, :] == ids[np.maximum(lagged, 0)])
        backwards = equal[:, ::-1]
        full = backwards.all(axis=1)
        # A run that fills the window is only a lower bound (the window never fills at w = length,
        # since position 0 has nothing to compare with).
        runs[todo] = np.where(full, window, np.argmin(backwards, axis=1))
        exact[todo] = ~full
        qualifying = np.flatnonzero(runs >= needed)
        limit = qualifying[0] + 1 if qualifying.size else count
        todo = np.flatnonzero(~exact[:limit])
        window = min(length, window * 4)
    qualifying = np.flatnonzero(runs >= needed)
    if not qualifying.size:
        return None
    best = int(qualifying[0])
    return best + 1, int(runs[best])


def find_tail(ids: np.ndarray, config: DetectConfig, slack: int = 0) -> tuple[int, int, int] | None:
    """The periodic run that ends within `slack` tokens of the end, as (period, run, end), where
    `end` is the index just past the run; runs that end later are preferred."""
    thresholds = run_thresholds(config, np.arange(1, config.max_period + 1))
    for cut in range(min(slack, len(ids)) + 1):
        found = tail_period(ids[: len(ids) - cut], config.max_period, thresholds)
        if found is not None:
            return found[0], found[1], len(ids) - cut
    return None


def find_periodic_tail(
    tokens: Sequence[Hashable] | np.ndarray, config: DetectConfig | None = None
) -> LoopVerdict | None:
    """The exact periodic tail of `tokens` (kind `verbatim`), or None when the tail is not
    periodic enough: at least `min_repeats` copies of a unit of at most `max_period` tokens,
    covering at least `min_span` tokens, up to the last token.

    Agrees with `LoopMonitor` fed the same tokens: `LoopMonitor.current()` after the last token
    equals this, and `LoopMonitor.push` reports the first prefix for which this is not None.
    """
    found = find_tail(as_ids(tokens), config or DetectConfig())
    if found is None:
        return None
    period, run, end = found
    return tail_verdict(end, period, run)

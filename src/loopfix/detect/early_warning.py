"""Early-warning signals from per-step log-probs: the low-entropy streak and the confidence
flywheel.

- Low-entropy streak (seed 001): entropy below `entropy_threshold` (0.3 nats) for
  `entropy_streak` (3) consecutive steps. Reported as the first step of the first such streak.
- Confidence flywheel (Pipis et al.): once a loop starts, the top-1 probability climbs toward 1.
  The loop's span is cut into at most `_TREND_POINTS` equal stretches; the mean top-1 probability
  of each is the trend, and the flywheel is on when the trend ends higher than it starts and
  its last point reaches `flywheel_min_top1`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from .config import DetectConfig
from .verdict import LoopVerdict

_TREND_POINTS = 8
StepValues = Sequence[float] | np.ndarray


def step_signals(
    logprobs: Sequence[Sequence[float]] | StepValues | None = None,
    entropies: StepValues | None = None,
    top1: StepValues | None = None,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Per-step (entropy, top-1 probability), each None when it cannot be derived.

    `logprobs` is either 2-D (per step, the log-probs of the whole vocabulary or of its top-k;
    top-k entries are renormalised) or 1-D (the log-prob of each sampled token, taken as the
    top-1 probability, exact under greedy decoding). Explicit `entropies` and `top1` win.
    """
    entropy_values = None if entropies is None else np.asarray(entropies, dtype=np.float64)
    top1_values = None if top1 is None else np.asarray(top1, dtype=np.float64)
    if logprobs is not None:
        table = np.asarray(logprobs, dtype=np.float64)
        if table.ndim == 2:
            shifted = table - table.max(axis=1, keepdims=True)
            probs = np.exp(shifted)
            probs /= probs.sum(axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                terms = np.where(probs > 0, probs * np.log(probs), 0.0)
            if entropy_values is None:
                entropy_values = -terms.sum(axis=1)
            if top1_values is None:
                top1_values = probs.max(axis=1)
        elif table.ndim == 1 and top1_values is None:
            top1_values = np.exp(table)
        elif table.ndim not in (1, 2):
            raise ValueError(f"logprobs must be 1-D or 2-D, got shape {table.shape}")
    return entropy_values, top1_values


def entropy_streak_onset(entropies: np.ndarray, threshold: float, streak: int) -> int | None:
    """First step of the first run of `streak` consecutive steps with entropy < `threshold`."""
    low = (entropies < threshold).astype(np.int64)
    if len(low) < streak:
        return None
    window_sums = np.convolve(low, np.ones(streak, dtype=np.int64), mode="valid")
    hits = np.flatnonzero(window_sums == streak)
    return int(hits[0]) if hits.size else None


def top1_trend(top1: np.ndarray, start: int, end: int) -> tuple[float, ...]:
    """Mean top-1 probability over up to `_TREND_POINTS` equal stretches of steps [start, end)."""
    values = top1[start : min(end, len(top1))]
    if not len(values):
        return ()
    return tuple(
        round(float(part.mean()), 4)
        for part in np.array_split(values, min(_TREND_POINTS, len(values)))
    )


def with_early_warning(
    verdict: LoopVerdict,
    config: DetectConfig,
    entropies: np.ndarray | None,
    top1: np.ndarray | None,
) -> LoopVerdict:
    """`verdict` with the early-warning fields filled from the per-step signals."""
    streak = None
    if entropies is not None:
        streak = entropy_streak_onset(entropies, config.entropy_threshold, config.entropy_streak)
    trend, flywheel = None, None
    if top1 is not None and verdict.looping and verdict.span is not None:
        trend = top1_trend(top1, verdict.span.start, verdict.span.end)
        flywheel = (
            len(trend) >= 2 and trend[-1] > trend[0] and trend[-1] >= config.flywheel_min_top1
        )
    return replace(verdict, entropy_streak_onset=streak, flywheel=flywheel, top1_trend=trend)

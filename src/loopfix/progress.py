"""Progress of long work (scans, guard runs, verification arms), told as it goes.

Work reports through a `Progress` callback; the caller decides what it shows. `line_progress` is
the plain form, a line per label at the start, at most every `PROGRESS_LINE_SECONDS`, and at the
end, for logs, pipes and CI, where a terminal's progress bar shows nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["PROGRESS_LINE_SECONDS", "Progress", "ProgressFactory", "line_progress"]

Progress = Callable[[int, int | None], None]
"""Called with (samples just finished, total samples to generate when it is known)."""
ProgressFactory = Callable[[str], Progress]
"""A `Progress` for a label ("measure", "guard dry T=0.6"): one per piece of work."""

PROGRESS_LINE_SECONDS = 30.0
"""The longest silence of `line_progress` while work advances (a real model's scan runs for
minutes; a new user took 100-366 s without a line for a hang)."""


def line_progress(
    label: str, report: Callable[[str], None], every: float = PROGRESS_LINE_SECONDS
) -> Progress:
    """A `Progress` that reports `label: done/total samples, seconds` at the start, at most
    every `every` seconds, and at the end."""
    started, last = time.perf_counter(), [0.0]
    counts = {"done": 0, "total": 0}

    def on_progress(advance: int, total: int | None) -> None:
        if total is not None:
            counts["total"] = total
            if total == 0:  # a resumed scan with nothing left to generate
                report(f"  {label}: every sample already recorded")
                return
        counts["done"] += advance
        now = time.perf_counter() - started
        if advance and now - last[0] < every and counts["done"] < counts["total"]:
            return
        last[0] = now
        report(f"  {label}: {counts['done']}/{counts['total']} samples, {now:.0f} s")

    return on_progress

"""The curriculum's stages (seed 001, 4.1: "first forbid repetition entirely, then relax the
constraint, then fine-tune on the full task") as which walk tokens carry loss at a step.

Repetition is the teacher re-entering an arm it has already explored (it is memoryless, so it
does that; a student that copies it loops). Stage 1 trains only on walks that never do; stage 2
trains on every walk but puts no loss on a repeated excursion (the student reads repeats in its
context, it is never taught to make one); stage 3 is the full task. The data stream is the same
in every stage and arm; only the loss mask changes.
"""

from __future__ import annotations

from loopfix.lab.config import TrainConfig
from loopfix.lab.stargraph import BACK_ID

__all__ = ["loss_mask", "repeated_excursions", "stage_at"]


def stage_at(config: TrainConfig, step: int) -> int:
    """1, 2 or 3: the stage that optimizer step `step` (0-based) trains in."""
    if step < round(config.curriculum_strict * config.steps):
        return 1
    if step < round((config.curriculum_strict + config.curriculum_relaxed) * config.steps):
        return 2
    return 3


def repeated_excursions(walk: list[int]) -> list[bool]:
    """Per walk token: whether it belongs to an excursion into an arm the walk entered before,
    from the arm's first node through the `back root` that ends it."""
    marks = [False] * len(walk)
    entered: set[int] = set()
    start = 1  # the first excursion starts after the root
    while start < len(walk):
        end = start
        while end < len(walk) and walk[end] != BACK_ID:
            end += 1
        end = min(end + 2, len(walk))  # `back` and the root after it
        if walk[start] in entered:
            marks[start:end] = [True] * (end - start)
        entered.add(walk[start])
        start = end
    return marks


def loss_mask(walk: list[int], stage: int) -> list[bool]:
    """Per walk token: whether it carries loss in `stage`."""
    if stage == 3:
        return [True] * len(walk)
    repeated = repeated_excursions(walk)
    if stage == 1:
        return [not any(repeated)] * len(walk)
    return [not mark for mark in repeated]

"""The step judge: does each step of a `think` output add something new, or restate?

Every step of the `think` families is one line that states checkable facts: numbers (operands,
running values, item positions, counts) and towns (single capital letters). A step *adds
something new* when it states a fact that no earlier step of the same thinking stated; a step
that adds nothing restates (a legitimate re-check does too, once, before the thinking moves
on). The judge labels an output by its final run of steps that add nothing:

- `clean`: that run is shorter than `MIN_RUN` steps, or it does not reach the end of the
  output (the thinking closed after it: the model moved on);
- `copies`: a run of >= `MIN_RUN` steps to the end of an unclosed thinking in which every step
  after the first is a verbatim or near copy (`NEAR` similarity or more) of a step before it
  (the first may restate in other words: the unit the copies repeat);
- `circling`: such a run in which later steps too restate in other words.

The onset is the first step of that final run (a character offset into the text). Only the
thinking is judged (from `<think>`, or the start, to `</think>` or the end); a loop after it,
in the answer, is `loopfix detect`'s to find.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from loopfix.thinking import THINK_END, THINK_START

__all__ = ["MIN_RUN", "NEAR", "Label", "StepJudgement", "facts", "judge_steps", "split_steps"]

MIN_RUN = 3
NEAR = 0.8
Label = Literal["clean", "copies", "circling"]

_FACT = re.compile(r"\d+|\b[A-Z]\b")


@dataclass(frozen=True)
class Step:
    text: str
    start: int
    """Character offset of the step in the whole output."""


@dataclass(frozen=True)
class StepJudgement:
    label: Label
    closed: bool
    """The thinking closed (`</think>` was written)."""
    steps: int
    new: tuple[bool, ...]
    """Per step: whether it added a fact."""
    run: int
    """Length of the final run of steps that add nothing."""
    onset: int | None
    """Character offset of the run's first step, when the label is not clean."""

    @property
    def looping(self) -> bool:
        return self.label != "clean"

    def to_dict(self) -> dict[str, object]:
        return {
            "label": self.label,
            "closed": self.closed,
            "steps": self.steps,
            "run": self.run,
            "onset": self.onset,
        }


def split_steps(text: str) -> tuple[list[Step], bool]:
    """The thinking's non-empty lines as steps, and whether the thinking closed. The
    unfinished last line of an unclosed thinking is left out."""
    begin = text.find(THINK_START)
    begin = 0 if begin < 0 else begin + len(THINK_START)
    end = text.find(THINK_END, begin)
    closed = end >= 0
    thinking = text[begin : end if closed else len(text)]
    lines = thinking.split("\n")
    if not closed and len(lines) > 1:
        # An unclosed thinking was cut mid-line at the token limit: its last line is a piece
        # of a step ("12 * 3 = 3" of "= 36"), whose facts are not the step's.
        lines = lines[:-1]
    steps, offset = [], begin
    for line in lines:
        stripped = line.strip()
        if stripped:
            steps.append(Step(stripped, offset + line.index(stripped)))
        offset += len(line) + 1
    return steps, closed


def facts(step: str) -> set[str]:
    """The checkable facts a step states: its numbers and its towns (capital letters)."""
    return set(_FACT.findall(step))


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def _is_copy(step: str, earlier: list[str]) -> bool:
    text = _normal(step)
    return any(
        text == other or SequenceMatcher(None, text, other, autojunk=False).ratio() >= NEAR
        for other in map(_normal, earlier)
    )


def judge_steps(text: str) -> StepJudgement:
    steps, closed = split_steps(text)
    seen: set[str] = set()
    new = []
    for step in steps:
        stated = facts(step.text)
        new.append(bool(stated - seen))
        seen |= stated
    run = 0
    while run < len(steps) and not new[len(steps) - 1 - run]:
        run += 1
    if closed or run < MIN_RUN:
        return StepJudgement("clean", closed, len(steps), tuple(new), run, None)
    first = len(steps) - run
    earlier = [step.text for step in steps[:first]]
    # The run's first step may say an earlier step in other words ("Check: ..."); the loop is
    # of copies when every later step copies a step before it, the run's own included.
    copies = all(
        _is_copy(step.text, earlier + [s.text for s in steps[first:position]])
        for position, step in enumerate(steps[first + 1 :], start=first + 1)
    )
    label: Label = "copies" if copies else "circling"
    return StepJudgement(label, closed, len(steps), tuple(new), run, steps[first].start)

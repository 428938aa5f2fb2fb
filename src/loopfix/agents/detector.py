"""The stuck-agent rule (docs/agents.md): a run of steps that repeats without progress.

Five kinds, each a run of consecutive steps:
- identical-calls: the same call with the same result, `identical_repeats` times;
- error-loop: the same error result (numbers aside), `error_repeats` times (arguments may
  change);
- same-result: the same tool with changing arguments and the same non-trivial result,
  `same_result_repeats` times;
- monologue: the same assistant message without a tool call (and the same reply to it),
  `monologue_repeats` times;
- alternation: a unit of 2 to `max_period` steps (calls and results) repeated
  `alternation_repeats` times (A B A B A B).

Polling is told apart by its results: a call repeated while its result changes is no run of
any kind, and a run whose arguments differ only in numbers that grow by half or more each call
(`sleep 5`, `sleep 10`, `sleep 20`; a growing timeout) is a wait with back-off, not a loop.
Results that say nothing (an empty output, a bare exit code) never make a same-result run:
every edit returns them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from loopfix.agents.normalise import backs_off, excerpt, is_trivial, mask_numbers
from loopfix.agents.steps import SAY, Step

Kind = Literal["error-loop", "identical-calls", "monologue", "same-result", "alternation"]
KINDS: tuple[Kind, ...] = get_args(Kind)
"""Every kind, in the order that breaks a tie between runs starting at the same step (the
more specific reading first)."""


class AgentConfig(BaseModel):
    """Thresholds of the stuck-agent rule (chosen on the tune split, docs/agents.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    identical_repeats: int = Field(4, ge=2, le=100, description="Copies of an identical step.")
    error_repeats: int = Field(3, ge=2, le=100, description="Steps in a row with the same error.")
    same_result_repeats: int = Field(
        4, ge=2, le=100, description="Calls in a row of one tool with the same non-trivial result."
    )
    monologue_repeats: int = Field(
        3, ge=2, le=100, description="Copies of the same assistant message without a tool call."
    )
    alternation_repeats: int = Field(3, ge=2, le=100, description="Copies of a repeating unit.")
    max_period: int = Field(
        4, ge=2, le=16, description="Longest unit, in steps, of an alternation."
    )
    tail_steps: int = Field(
        64,
        ge=8,
        le=4096,
        description="Steps at the end of a history that the proxy checks (bounds its cost).",
    )


@dataclass(frozen=True)
class AgentVerdict:
    stuck: bool
    kind: Kind | None = None
    onset_turn: int | None = None
    """The assistant turn (1-based) that made the run's first step."""
    repeats: int = 0
    """Copies of the unit in the run (steps, for error-loop and same-result)."""
    unit: tuple[str, ...] = ()
    """The repeating steps as `tool(args) -> result`, shortened."""
    ongoing: bool = False
    """The run reaches the trajectory's last step: the agent is stuck now."""

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "unit": list(self.unit)}


@dataclass(frozen=True)
class _Run:
    kind: Kind
    start: int
    end: int
    """Index one past the run's last step."""
    period: int
    copies: int


def describe(step: Step) -> str:
    name = "message" if step.name == SAY else step.name
    return f"{name}({excerpt(step.shown_args)}) -> {excerpt(step.result)}"


def _stretches(same: list[bool], offset: int) -> list[tuple[int, int]]:
    """(start, end) of each maximal stretch of True in `same`, where `same[j]` compares step
    j + offset with step j; the stretch covers steps start .. end - 1."""
    stretches: list[tuple[int, int]] = []
    start: int | None = None
    for j, equal in enumerate([*same, False]):
        if equal and start is None:
            start = j
        elif not equal and start is not None:
            stretches.append((start, j + offset))
            start = None
    return stretches


def _has_smaller_period(unit: list[Step]) -> bool:
    return any(
        len(unit) % d == 0 and all(unit[i].pair == unit[i % d].pair for i in range(len(unit)))
        for d in range(1, len(unit))
    )


def _periodic_runs(steps: list[Step], config: AgentConfig) -> list[_Run]:
    runs: list[_Run] = []
    for period in range(1, config.max_period + 1):
        same = [steps[j].pair == steps[j + period].pair for j in range(len(steps) - period)]
        for start, end in _stretches(same, period):
            copies = (end - start) // period
            unit = steps[start : start + period]
            if period > 1:
                if _has_smaller_period(unit):
                    continue
                kind: Kind = "alternation"
                needed = config.alternation_repeats
            elif unit[0].name == SAY:
                kind, needed = "monologue", config.monologue_repeats
            elif unit[0].error is not None:
                kind, needed = "error-loop", config.error_repeats
            else:
                kind, needed = "identical-calls", config.identical_repeats
            if copies >= needed:
                runs.append(_Run(kind, start, start + copies * period, period, copies))
    return runs


def _keyed_runs(steps: list[Step], kind: Kind, needed: int, key: list[object | None]) -> list[_Run]:
    """Runs of consecutive calls whose `key` is equal and not None, at least `needed` long,
    whose arguments are not a back-off."""
    same = [key[j] is not None and key[j] == key[j + 1] for j in range(len(steps) - 1)]
    runs = []
    for start, end in _stretches(same, 1):
        if end - start >= needed and not backs_off([s.args for s in steps[start:end]]):
            runs.append(_Run(kind, start, end, 1, end - start))
    return runs


def _find_runs(steps: list[Step], config: AgentConfig) -> list[_Run]:
    # the same error is the same whole result (numbers masked): a different traceback or
    # output around the same last line is new information, as when an agent instruments a bug
    errors: list[object | None] = [
        None if s.name == SAY or s.error is None else mask_numbers(s.result or "") for s in steps
    ]
    results: list[object | None] = [
        None if s.name == SAY or s.error is not None or is_trivial(s.result) else (s.name, s.result)
        for s in steps
    ]
    same_result = [
        run
        for run in _keyed_runs(steps, "same-result", config.same_result_repeats, results)
        if len({s.args for s in steps[run.start : run.end]}) > 1
    ]
    error_runs = _keyed_runs(steps, "error-loop", config.error_repeats, errors)
    return [*_periodic_runs(steps, config), *error_runs, *same_result]


def detect_stuck(
    steps: list[Step], config: AgentConfig | None = None, ongoing_only: bool = False
) -> AgentVerdict:
    """The earliest run in `steps` (with `ongoing_only`, the earliest that reaches the last
    step: whether the agent is stuck now), or a not-stuck verdict."""
    config = config or AgentConfig()
    runs = _find_runs(steps, config)
    if ongoing_only:
        runs = [run for run in runs if run.end == len(steps)]
    if not runs:
        return AgentVerdict(stuck=False)
    run = min(runs, key=lambda r: (r.start, KINDS.index(r.kind)))
    shown = steps[run.start : run.start + run.period]
    if run.kind in ("error-loop", "same-result"):
        # the unit is the call that keeps failing or answering the same: its first and last form
        shown = [steps[run.start], steps[run.end - 1]] if run.copies > 1 else shown
    return AgentVerdict(
        stuck=True,
        kind=run.kind,
        onset_turn=steps[run.start].turn,
        repeats=run.copies,
        unit=tuple(dict.fromkeys(describe(step) for step in shown)),
        ongoing=run.end == len(steps),
    )

"""`rescue`: undo a loop instead of ending the answer.

Steps, per row:
1. A `LoopMonitor` watches the generated tokens.
2. On a loop (onset o, period p), if the row still has budget, a rescue is recorded
   (position, period, banned token) and a rollback is requested: to o (`at="onset"`, removing
   every copy of the unit), to o + p (`at="repeat"`, keeping one statement of it), or to the
   position of the first copy where the model was least sure (`at="uncertain"`: the lowest
   top-1 probability in [o, o + p), recorded as each token was chosen). The token that began
   the repeat is often forced by what precedes it (a newline after a sentence); the least sure
   step is where the loop chose its branch. `uncertain` is the default: on the testbed, rolling
   back to the onset banned the walk's forced first step and lost accuracy (docs/guards.md).
   Without recorded confidences (a driver that never called `apply`) it falls back to the onset.
3. The driver rolls every guard of the row back (and, with HF, crops the KV cache); this guard
   then bans, at that position, the token that began the repeat there. Bans at a position
   accumulate over rescues, so a second rescue at the same place tries a third token.
4. Optionally the next `bump_steps` steps are sampled at `bump_temperature`.
A driver that cannot roll back (vLLM) uses `rollback=False`: the token the cycle would produce
is banned instead, at the next position (`onset`, `repeat`) or at the next time the cycle comes
round to its least sure step (`uncertain`).

`early=True`: once the model's own early warning has fired for the row (the decode engine reads
it from the model's hidden states, `engine.warning`, when a scan is given `--warning`), a loop
of 2 copies over half of `min_span` is enough to act on, where without it the rescue waits for
`min_repeats` (3) copies over `min_span` (32) tokens: the warning stands in for the missing
copy. Without a warning, or on a backend that reads none (vLLM), it acts as the plain rescue.

`escape="think_end"`: a loop found inside a think block (`<think>` seen, prompt included, after
the last `</think>`) is escaped by forcing `</think>` over the next steps, one marker token a
step (every other logit -inf; a newline first when the loop stopped mid-line), with no rollback
and no ban: the reasoning ends and the model moves on to its answer, which also works where
nothing can be taken back. The markers may be several tokens (`guards.think_block`). Outside a
think block, or when the vocabulary cannot spell both markers, the rescue bans as usual.
`restated=True` adds a second trigger for the escape, for circling that repeats no text: at each
line end inside the thought, the detector's restated-steps check (`detect.steps`: the last 5
steps bring no new content word or number) on the thought so far. A false alarm of it costs an
earlier answer, not a lost one, so it ends thoughts but never bans.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import torch
from pydantic import Field

from loopfix.detect import DetectConfig, LoopMonitor
from loopfix.detect.steps import StepReader, restated_run
from loopfix.guards.base import Guard, GuardContext, GuardParams, Row
from loopfix.guards.record import RescueRecord
from loopfix.guards.temperature import retemper_
from loopfix.guards.think_block import ThinkBlock, ThinkMarkers, think_markers
from loopfix.guards.watch import WatchParams, new_monitor

__all__ = ["RescueGuard", "RescueParams", "RescueState"]

EARLY_REPEATS = 2
# The restated-steps check's run length and words per step, as the detector ships them: the
# trigger is chosen on the detector's real-trace corpus, not on any model it guards.
RESTATED = DetectConfig()


class RescueParams(WatchParams):
    budget: int = Field(4, ge=0, description="rescues allowed per sequence")
    at: Literal["onset", "repeat", "uncertain"] = Field(
        "uncertain",
        description="roll back to the loop's onset, its first repeat, or its least sure step",
    )
    bump_temperature: float | None = Field(
        None, ge=0.0, description="temperature right after a rescue; None = unchanged"
    )
    bump_steps: int = Field(8, ge=0, description="steps the bumped temperature lasts")
    escape: Literal["ban", "think_end"] = Field(
        "ban",
        description="inside a think block: ban as usual, or force </think> at once (think_end)",
    )
    restated: bool = Field(
        False,
        description="with escape=think_end: also end the thinking when its last steps restate "
        "earlier ones (the detector's restated-steps check with its defaults, at each line end)",
    )
    early: bool = Field(
        False,
        description="once the model's own early warning fires (a scan's --warning), also act "
        "on 2 copies over half of min_span",
    )


@dataclass
class RescueState:
    monitor: LoopMonitor
    early: LoopMonitor | None = None  # the relaxed watch of `early`, acted on once warned
    think: ThinkBlock | None = None  # set only when escape="think_end" and the markers exist
    bans: dict[int, set[int]] = field(default_factory=dict)  # output position -> banned tokens
    rescues: list[RescueRecord] = field(default_factory=list)
    confidence: list[float] = field(default_factory=list)  # top-1 probability per position
    pending: int | None = None  # output length to roll back to
    bumped: int = 0
    replaying: bool = False
    thought: StepReader = field(  # the thought's steps, for `restated`
        default_factory=lambda: StepReader(RESTATED.restated_steps_min_words)
    )
    unread: list[str] = field(default_factory=list)  # the thought's text since its last line end


class RescueGuard(Guard):
    name = "rescue"
    Params = RescueParams

    def __init__(
        self,
        params: GuardParams | None = None,
        context: GuardContext | None = None,
        rollback: bool = True,
    ) -> None:
        super().__init__(params, context)
        self.can_roll_back = rollback

    @cached_property
    def think_markers(self) -> ThinkMarkers | None:
        return think_markers(self.context)

    def start(self, row: Row) -> RescueState:
        old: RescueState | None = row.state
        markers = self.think_markers if row.params.escape == "think_end" else None
        think = None if markers is None else ThinkBlock(markers)
        state = RescueState(new_monitor(row.params), early_monitor(row.params), think)
        if old is not None:  # a rollback: the ledger survives, the monitor restarts
            state.bans, state.rescues, state.bumped = old.bans, old.rescues, old.bumped
            state.confidence = old.confidence
            state.replaying = True
        return state

    def observe(self, row: Row, token: int) -> None:
        state: RescueState = row.state
        if state.think is not None:  # prompt tokens count: templates often open the block
            state.think.observe(token, generated=row.output_length > 0)
        if row.output_length <= 0:  # a prompt token
            return
        verdict = state.monitor.push(token)
        early = None if state.early is None else state.early.push(token)
        if verdict is None and row.warned:
            verdict = early
        restated = row.params.restated and self._restated(state, token)
        if verdict is None and not restated:
            return
        if state.replaying or len(state.rescues) >= row.params.budget:
            return
        output = row.output
        if state.think is not None and state.think.thinking:
            if state.think.forcing:  # already on its way out
                return
            assert self.context is not None and self.context.token_text is not None
            forced = state.think.close(self.context.token_text(output[-1]))
            # period 0: the restated-steps trigger, which has no token period
            period = 0 if verdict is None else int(verdict.period or 1)
            state.rescues.append(
                {
                    "detected_at": len(output),
                    "position": len(output),
                    "period": period,
                    "forced": forced,
                }
            )
            return
        assert verdict is not None  # restated steps are read only inside a thought
        onset, period = int(verdict.onset or 0), int(verdict.period or 1)
        branch = self._branch(row.params, state, onset, period)
        if self.can_roll_back:
            position = state.pending = branch
        else:  # the next position in the same phase of the cycle as the branch
            position = len(output) + (branch - len(output)) % period
        banned = output[branch]
        state.bans.setdefault(position, set()).add(banned)
        state.rescues.append(
            {"detected_at": len(output), "position": position, "period": period, "token": banned}
        )

    def _restated(self, state: RescueState, token: int) -> bool:
        """Whether the thought so far, at a line end, ends in restated steps (the detector's
        check with its defaults, DetectConfig.restated_steps_min and _min_words)."""
        if state.think is None or not state.think.thinking or state.think.forcing:
            return False
        assert self.context is not None and self.context.token_text is not None
        text = self.context.token_text(token)
        state.unread.append(text)
        if "\n" not in text:
            return False
        steps = state.thought.read("".join(state.unread))
        state.unread.clear()
        return len(restated_run(steps)) >= RESTATED.restated_steps_min

    @staticmethod
    def _branch(params: RescueParams, state: RescueState, onset: int, period: int) -> int:
        if params.at == "repeat":
            return onset + period
        first_copy = state.confidence[onset : onset + period]
        if params.at == "uncertain" and len(first_copy) == period:
            return onset + first_copy.index(min(first_copy))
        return onset

    def rollback(self, row: int, output_length: int) -> None:
        super().rollback(row, output_length)
        state: RescueState = self.rows[row].state
        state.replaying, state.pending = False, None
        # Bans past the rollback point belonged to the abandoned branch.
        state.bans = {at: banned for at, banned in state.bans.items() if at <= output_length}
        del state.confidence[output_length:]
        state.bumped = _bump_steps(self.rows[row].params)

    def pending(self) -> dict[int, int]:
        """row -> output length to roll back to, for every row that asked for a rescue."""
        return {
            index: row.state.pending
            for index, row in self.rows.items()
            if row.state.pending is not None
        }

    def rescues(self, row: int) -> list[RescueRecord]:
        return list(self.rows[row].state.rescues)

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        state: RescueState = row.state
        if row.params.at == "uncertain":
            del state.confidence[row.output_length :]  # a step taken again after a rollback
            state.confidence.append(float(torch.softmax(logits.float(), dim=-1).max()))
        if state.think is not None and state.think.force(logits):
            return
        banned = state.bans.get(row.output_length)
        if banned:
            keep = logits.clone()
            index = torch.tensor(sorted(banned), dtype=torch.long, device=logits.device)
            logits[index] = -float("inf")
            if torch.isinf(logits).all():  # never ban every token: undo and let it be
                logits.copy_(keep)
        if state.bumped and row.params.bump_temperature is not None:
            state.bumped -= 1
            retemper_(logits, row.temperature, row.params.bump_temperature, row.generator)


def early_monitor(params: RescueParams) -> LoopMonitor | None:
    """The relaxed watch an `early` rescue acts on after the warning: a loop is 2 copies of
    the unit over half the span (the defaults' 3 copies over 32 tokens are what it waits for
    without a warning)."""
    if not params.early:
        return None
    relaxed = {"min_repeats": EARLY_REPEATS, "min_span": max(1, params.min_span // 2)}
    return new_monitor(params.model_copy(update=relaxed))


def _bump_steps(params: RescueParams) -> int:
    return params.bump_steps if params.bump_temperature is not None else 0

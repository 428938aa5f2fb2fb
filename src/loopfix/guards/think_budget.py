"""`think-budget`: end the thinking after a fixed number of thought tokens, blind to whether the
model was looping or making progress (vLLM's `thinking_token_budget`, llama.cpp's
`--reasoning-budget`). With `low` set, each request's exit point is drawn uniformly from
[low, tokens] instead: the random-exit control of a think-escape, which forces the same exit
at points of the same spread with no detection at all, so a difference between the two is the
detection's doing and not the forced exit's.

The exit forces `</think>` one marker token a step (a line break first when mid-thought), as
`rescue.escape=think_end` does (`guards.think_block`); a vocabulary that cannot spell the
markers is an error, since a budget that silently never fires would measure nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch
from pydantic import Field, model_validator

from loopfix.guards.base import Guard, GuardError, GuardParams, Row
from loopfix.guards.record import ThinkExitRecord
from loopfix.guards.think_block import ThinkBlock, ThinkMarkers, think_markers
from loopfix.seeds import derive_seed

__all__ = ["ThinkBudgetGuard", "ThinkBudgetParams"]


class ThinkBudgetParams(GuardParams):
    tokens: int = Field(256, ge=1, description="thought tokens after which </think> is forced")
    low: int | None = Field(
        None,
        ge=0,
        description="draw each request's exit uniformly from [low, tokens] (the random-exit "
        "control); None = exit at `tokens`",
    )

    @model_validator(mode="after")
    def _low_below_tokens(self) -> ThinkBudgetParams:
        if self.low is not None and self.low > self.tokens:
            raise ValueError(f"low ({self.low}) must be at most tokens ({self.tokens})")
        return self


@dataclass
class ThinkBudgetState:
    think: ThinkBlock
    exit_at: int | None = None  # drawn at the first generated token, when the prompt is known
    exit: ThinkExitRecord | None = None


class ThinkBudgetGuard(Guard):
    name = "think-budget"
    Params = ThinkBudgetParams

    @cached_property
    def markers(self) -> ThinkMarkers:
        markers = think_markers(self.context)
        if markers is None:
            raise GuardError("guard 'think-budget' needs a vocabulary that spells </think>")
        return markers

    def start(self, row: Row) -> ThinkBudgetState:
        return ThinkBudgetState(ThinkBlock(self.markers))

    def observe(self, row: Row, token: int) -> None:
        state: ThinkBudgetState = row.state
        think = state.think
        think.observe(token, generated=row.output_length > 0)
        if row.output_length <= 0 or state.exit is not None:
            return
        if state.exit_at is None:
            state.exit_at = _exit_point(row)
        if think.thinking and think.thought >= state.exit_at:
            assert self.context is not None and self.context.token_text is not None
            forced = think.close(self.context.token_text(token))
            state.exit = {"position": row.output_length, "thought": think.thought, "forced": forced}

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        row.state.think.force(logits)


def _exit_point(row: Row) -> int:
    params: ThinkBudgetParams = row.params
    if params.low is None:
        return params.tokens
    # The prompt and the sampler's seed pick the point: a rerun, or a rollback, draws it again.
    sampler_seed = 0 if row.generator is None else row.generator.initial_seed()
    seed = derive_seed("think-budget", sampler_seed, *row.tokens[: row.prompt_length])
    draw = torch.Generator().manual_seed(seed)
    return int(torch.randint(params.low, params.tokens + 1, (1,), generator=draw))

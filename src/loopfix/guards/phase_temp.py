"""`phase-temp`: a temperature per phase of the answer (seed 001).

Seed 001: explore a little at the start (0.3), be exact in the middle (0), vary the conclusion
(0.7). The start is the first `start_tokens` generated tokens. The conclusion begins
- by position (`mode="position"`): at generated token `conclusion_at` (None: never);
- by markers (`mode="markers"`): after the think-block end marker (`</think>`) was generated.
Temperature 0 keeps only the argmax, so the middle is greedy even when the sampler is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from pydantic import Field

from loopfix.guards.base import Guard, GuardParams, Row
from loopfix.guards.temperature import retemper_

__all__ = ["PhaseTempGuard", "PhaseTempParams"]


class PhaseTempParams(GuardParams):
    start: float = Field(0.3, ge=0.0, description="temperature of the start phase")
    middle: float = Field(0.0, ge=0.0, description="temperature of the middle phase")
    conclusion: float = Field(0.7, ge=0.0, description="temperature of the conclusion phase")
    start_tokens: int = Field(32, ge=0, description="generated tokens in the start phase")
    mode: Literal["position", "markers"] = Field(
        "markers", description="how the conclusion is found: by position or by think markers"
    )
    conclusion_at: int | None = Field(
        None, ge=0, description="position mode: generated token where the conclusion begins"
    )
    think_end: str = Field("</think>", description="markers mode: text that ends the thinking")


@dataclass
class PhaseState:
    marker: tuple[int, ...]
    concluding: bool = False


class PhaseTempGuard(Guard):
    name = "phase-temp"
    Params = PhaseTempParams

    def start(self, row: Row) -> PhaseState:
        params: PhaseTempParams = row.params
        if params.mode == "position":
            return PhaseState(())
        if self.context is None or self.context.encode is None:
            raise ValueError("guard 'phase-temp' in markers mode needs a tokenizer")
        return PhaseState(tuple(self.context.encode(params.think_end)))

    def observe(self, row: Row, token: int) -> None:
        state: PhaseState = row.state
        size = len(state.marker)
        if size and row.output_length >= size and tuple(row.tokens[-size:]) == state.marker:
            state.concluding = True

    def target(self, row: Row) -> float:
        params: PhaseTempParams = row.params
        position = row.output_length
        if params.mode == "position":
            concluding = params.conclusion_at is not None and position >= params.conclusion_at
        else:
            concluding = row.state.concluding
        if concluding:
            return params.conclusion
        return params.start if position < params.start_tokens else params.middle

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        retemper_(logits, row.temperature, self.target(row), row.generator)

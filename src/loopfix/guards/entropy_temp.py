"""`entropy-temp`: when the model has been sure of itself for too long, loosen it (seed 001).

After `streak` consecutive steps whose entropy (nats, of the logits as this guard receives them,
at temperature 1) is below `threshold`, the next `steps` steps are sampled at `temperature`;
then the sampler's own temperature returns and the count starts again. Seed 001: 0.3 and 3.
The streak is counted as steps are taken, so it restarts after a rescue's rollback.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from pydantic import Field

from loopfix.guards.base import Guard, GuardParams, Row
from loopfix.guards.temperature import entropy, retemper_

__all__ = ["EntropyTempGuard", "EntropyTempParams"]


class EntropyTempParams(GuardParams):
    threshold: float = Field(0.3, ge=0.0, description="entropy (nats) of a low-entropy step")
    streak: int = Field(3, ge=1, description="consecutive low-entropy steps that trigger")
    temperature: float = Field(1.0, gt=0.0, description="temperature of the raised steps")
    steps: int = Field(8, ge=1, description="how many steps stay raised")


@dataclass
class EntropyTempState:
    low: int = 0  # consecutive low-entropy steps so far
    raised: int = 0  # raised steps still to come


class EntropyTempGuard(Guard):
    name = "entropy-temp"
    Params = EntropyTempParams

    def start(self, row: Row) -> EntropyTempState:
        return EntropyTempState()

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        params: EntropyTempParams = row.params
        state: EntropyTempState = row.state
        if state.raised:
            state.raised -= 1
            retemper_(logits, row.temperature, params.temperature, row.generator)
            return
        state.low = state.low + 1 if entropy(logits) < params.threshold else 0
        if state.low >= params.streak:
            state.low, state.raised = 0, params.steps

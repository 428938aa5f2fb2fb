"""`adaptive-temp`: temperature from confidence (seed 002).

Every step is sampled at T = clip(base * (2 - p_top1), low, high), where p_top1 is the largest
probability of softmax(logits) at temperature 1: a confident step runs near `base`, an unsure one
up to twice as hot. Seed 002's defaults: base 1.0, clip to [0.3, 2.0].
"""

from __future__ import annotations

import torch
from pydantic import Field, model_validator

from loopfix.guards.base import Guard, GuardParams, Row
from loopfix.guards.temperature import retemper_

__all__ = ["AdaptiveTempGuard", "AdaptiveTempParams", "adaptive_temperature"]


class AdaptiveTempParams(GuardParams):
    base: float = Field(1.0, gt=0.0, description="temperature of a fully confident step")
    low: float = Field(0.3, gt=0.0, description="lowest temperature")
    high: float = Field(2.0, gt=0.0, description="highest temperature")

    @model_validator(mode="after")
    def _ordered(self) -> AdaptiveTempParams:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) must not exceed high ({self.high})")
        return self


def adaptive_temperature(logits: torch.Tensor, params: AdaptiveTempParams) -> float:
    top1 = float(torch.softmax(logits.float(), dim=-1).max())
    return min(max(params.base * (2.0 - top1), params.low), params.high)


class AdaptiveTempGuard(Guard):
    name = "adaptive-temp"
    Params = AdaptiveTempParams

    def start(self, row: Row) -> None:
        return None

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        target = adaptive_temperature(logits, row.params)
        retemper_(logits, row.temperature, target, row.generator)

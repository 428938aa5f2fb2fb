"""`dynamic-penalty`: a repetition penalty that grows with the generated length (seed 001).

factor = min(base ** (generated / scale), cap): seed 001 sketches 1.2 ** (len / 10), which
passes 6 after 100 tokens and overflows a float after a few thousand, so it is capped. The
penalty itself has HF semantics over prompt and output (see `penalty`); it has no presence or
frequency part.
"""

from __future__ import annotations

import math

from pydantic import Field

from loopfix.guards.base import GuardParams, Row
from loopfix.guards.penalty import PenaltyGuard

__all__ = ["DynamicPenaltyGuard", "DynamicPenaltyParams"]


class DynamicPenaltyParams(GuardParams):
    base: float = Field(1.2, ge=1.0, description="growth base per `scale` generated tokens")
    scale: float = Field(10.0, gt=0.0, description="generated tokens per factor of `base`")
    cap: float = Field(1.5, ge=1.0, description="largest penalty the growth may reach")


class DynamicPenaltyGuard(PenaltyGuard):
    name = "dynamic-penalty"
    Params = DynamicPenaltyParams

    def factor(self, row: Row) -> float:
        params: DynamicPenaltyParams = row.params
        exponent = row.output_length / params.scale
        # Compare in log space: base ** exponent itself overflows on long outputs.
        if exponent * math.log(params.base) >= math.log(params.cap):
            return params.cap
        return params.base**exponent

    def counts_output(self, row: Row) -> bool:
        return False

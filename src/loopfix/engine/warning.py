"""What the decode engine asks of an early warning that reads the model while it generates
(`states.warning.WarningProbe` is one): the hidden layer it reads, a projection of each row's
state there to one number per step, and the probability after a step from the sequence's
per-step numbers so far. Kept to numbers the engine already holds, so that a rollback, which
trims a sequence's lists, trims the warning's history with them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

__all__ = ["StepWarning"]


class StepWarning(Protocol):
    @property
    def layer(self) -> int: ...

    @property
    def threshold(self) -> float: ...

    def project(self, states: np.ndarray) -> np.ndarray:
        """(rows, width) hidden states -> (rows,) the number per step the warning keeps."""
        ...

    def step_probability(
        self, projected: Sequence[float], top1: Sequence[float], entropy: Sequence[float]
    ) -> float:
        """The warning's probability after the last step of these per-step lists."""
        ...

"""`GuardChain`: several guards over one batch, fed and applied together."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from loopfix.guards.base import Guard, GuardParams
from loopfix.guards.cut import CutGuard
from loopfix.guards.record import GuardRecord
from loopfix.guards.rescue import RescueGuard
from loopfix.guards.think_budget import ThinkBudgetGuard

__all__ = ["GuardChain"]


class GuardChain:
    """Guards applied in order; batch changes and tokens reach each of them.

    An empty chain is "none": `apply` returns the logits untouched (the same tensor).
    """

    def __init__(self, guards: Sequence[Guard]) -> None:
        self.guards = list(guards)

    @property
    def names(self) -> list[str]:
        return [guard.name for guard in self.guards]

    @property
    def spec(self) -> str:
        return "+".join(self.names) or "none"

    def __bool__(self) -> bool:
        return bool(self.guards)

    def add(
        self,
        row: int,
        prompt: Sequence[int],
        output: Sequence[int] = (),
        params: dict[str, GuardParams] | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> None:
        """Start a sequence; `params` may override any guard's parameters for this row."""
        for offset, guard in enumerate(self.guards):
            own = (params or {}).get(guard.name)
            # Distinct seeds per guard keep two sampling guards from drawing the same numbers.
            guard_seed = None if seed is None else seed * 7919 + offset
            guard.add(row, prompt, output, own, temperature, guard_seed)

    def remove(self, row: int) -> None:
        for guard in self.guards:
            guard.remove(row)

    def move(self, source: int, target: int) -> None:
        for guard in self.guards:
            guard.move(source, target)

    def swap(self, first: int, second: int) -> None:
        for guard in self.guards:
            guard.swap(first, second)

    def extend(self, row: int, tokens: Sequence[int]) -> None:
        for guard in self.guards:
            guard.extend(row, tokens)

    def rollback(self, row: int, output_length: int) -> None:
        for guard in self.guards:
            guard.rollback(row, output_length)

    def warn(self, row: int) -> None:
        for guard in self.guards:
            guard.warn(row)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for guard in self.guards:
            logits = guard.apply(logits)
        return logits

    def is_argmax_invariant(self) -> bool:
        return all(guard.is_argmax_invariant() for guard in self.guards)

    def pending_rollbacks(self) -> dict[int, int]:
        """row -> output length to roll back to (rescue)."""
        pending: dict[int, int] = {}
        for guard in self.guards:
            if isinstance(guard, RescueGuard):
                pending.update(guard.pending())
        return pending

    def stopped(self, row: int) -> bool:
        """Whether a `cut` guard ended this row."""
        return any(isinstance(g, CutGuard) and g.stopped(row) for g in self.guards)

    def record(self, row: int) -> GuardRecord:
        """What the guards did to a row, for the sample's record (rescues, cut)."""
        record: GuardRecord = {"guards": self.spec}
        for guard in self.guards:
            state = guard.rows.get(row)
            if state is None:
                continue
            if isinstance(guard, RescueGuard):
                record["rescues"] = guard.rescues(row)
            if isinstance(guard, CutGuard) and state.state.cut is not None:
                record["cut"] = state.state.cut.copy()
            if isinstance(guard, ThinkBudgetGuard) and state.state.exit is not None:
                record["think_exit"] = state.state.exit.copy()
        return record

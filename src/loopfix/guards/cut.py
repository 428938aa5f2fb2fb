"""`cut`: stop a row at the first loop (vLLM's `repetition_detection` behaviour), a baseline.

The guard never changes logits; a driver asks `stopped(row)` after each token (the HF adapter
as a `StoppingCriteria`) and ends that row with finish reason "repetition".
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from loopfix.detect import LoopMonitor
from loopfix.guards.base import Guard, Row
from loopfix.guards.record import CutRecord
from loopfix.guards.watch import WatchParams, new_monitor

__all__ = ["CutGuard", "CutParams"]


class CutParams(WatchParams):
    pass


@dataclass
class CutState:
    monitor: LoopMonitor
    cut: CutRecord | None = None  # the loop that ended the row


class CutGuard(Guard):
    name = "cut"
    Params = CutParams

    def start(self, row: Row) -> CutState:
        return CutState(new_monitor(row.params))

    def observe(self, row: Row, token: int) -> None:
        state: CutState = row.state
        if row.output_length <= 0 or state.cut is not None:  # prompt, or already cut
            return
        verdict = state.monitor.push(token)
        if verdict is not None:
            state.cut = {"position": row.output_length, "period": int(verdict.period or 0)}

    def stopped(self, row: int) -> bool:
        state = self.rows.get(row)
        return state is not None and state.state.cut is not None

    def is_argmax_invariant(self) -> bool:
        return True

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        return None

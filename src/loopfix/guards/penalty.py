"""`penalty`: the baselines users already have, as one guard.

- repetition (HF semantics): every token seen in the prompt or output has its logit divided by
  the penalty when positive and multiplied by it when negative;
- presence / frequency (OpenAI semantics): over generated tokens only,
  logit -= presence * [count > 0] + frequency * count.

State per row: the distinct tokens seen (prompt + output) and the distinct output tokens with
their counts, in growable tensors updated in O(1) per token. `apply` gathers and scatters only
those tokens, for all rows at once: O(distinct tokens), never O(vocab) or O(context).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
from pydantic import Field

from loopfix.guards.base import Guard, GuardParams, Row

__all__ = ["PenaltyGuard", "PenaltyParams", "PenaltyState", "TokenBuffer"]


class PenaltyParams(GuardParams):
    # Asking for `penalty` turns one on: presence 1.5, the upper end of the range Qwen's model
    # cards recommend against endless repetition (docs/guards.md); the others stay off.
    repetition: float = Field(1.0, gt=0.0, description="HF repetition penalty; 1 = off")
    presence: float = Field(
        1.5, ge=-2.0, le=2.0, description="OpenAI presence penalty (Qwen model cards: 0-2)"
    )
    frequency: float = Field(0.0, ge=-2.0, le=2.0, description="OpenAI frequency penalty; 0 = off")


class TokenBuffer:
    """A tensor that grows by appending (capacity doubles), viewed up to its size."""

    def __init__(self, dtype: torch.dtype) -> None:
        self.data = torch.zeros(64, dtype=dtype)
        self.size = 0

    def append(self, value: float) -> None:
        if self.size == self.data.numel():
            self.data = torch.cat([self.data, torch.zeros_like(self.data)])
        self.data[self.size] = value
        self.size += 1

    def view(self) -> torch.Tensor:
        return self.data[: self.size]


@dataclass
class PenaltyState:
    seen: dict[int, None] = field(default_factory=dict)  # distinct prompt + output tokens
    seen_ids: TokenBuffer = field(default_factory=lambda: TokenBuffer(torch.long))
    slots: dict[int, int] = field(default_factory=dict)  # output token -> slot in counts
    output_ids: TokenBuffer = field(default_factory=lambda: TokenBuffer(torch.long))
    counts: TokenBuffer = field(default_factory=lambda: TokenBuffer(torch.float32))


class PenaltyGuard(Guard):
    name = "penalty"
    Params: ClassVar[type[GuardParams]] = PenaltyParams

    def start(self, row: Row) -> PenaltyState:
        return PenaltyState()

    def observe(self, row: Row, token: int) -> None:
        state: PenaltyState = row.state
        if token not in state.seen:
            state.seen[token] = None
            state.seen_ids.append(token)
        if len(row.tokens) <= row.prompt_length:
            return
        slot = state.slots.get(token)
        if slot is None:
            state.slots[token] = state.output_ids.size
            state.output_ids.append(token)
            state.counts.append(1.0)
        else:
            state.counts.data[slot] += 1.0

    def factor(self, row: Row) -> float:
        """The repetition penalty for this row's next token."""
        return float(row.params.repetition)

    def counts_output(self, row: Row) -> bool:
        """Whether this row has a presence or frequency penalty."""
        return bool(row.params.presence or row.params.frequency)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        self.apply_rows({i: row for i, row in self.rows.items() if i < logits.shape[0]}, logits)
        return logits

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        self.apply_rows({0: row}, logits[None])

    def apply_rows(self, rows: dict[int, Row], logits: torch.Tensor) -> None:
        self._repetition(rows, logits)
        self._presence_frequency(rows, logits)

    def _repetition(self, rows: dict[int, Row], logits: torch.Tensor) -> None:
        picked = {i: row for i, row in rows.items() if self.factor(row) != 1.0}
        if not picked:
            return
        ids = [row.state.seen_ids.view() for row in picked.values()]
        # The state lives on the CPU; the logits may not (vLLM on a GPU).
        where = _row_index(list(picked), ids).to(logits.device)
        flat = torch.cat(ids).to(logits.device)
        factor = torch.cat(
            [
                torch.full((t.numel(),), self.factor(r))
                for r, t in zip(picked.values(), ids, strict=True)
            ]
        ).to(logits.device, logits.dtype)
        values = logits[where, flat]
        logits[where, flat] = torch.where(values < 0, values * factor, values / factor)

    def _presence_frequency(self, rows: dict[int, Row], logits: torch.Tensor) -> None:
        picked = {i: row for i, row in rows.items() if self.counts_output(row)}
        if not picked:
            return
        ids = [row.state.output_ids.view() for row in picked.values()]
        offsets = []
        for row in picked.values():
            counts = row.state.counts.view()
            offsets.append(row.params.frequency * counts + row.params.presence)
        logits.index_put_(
            (_row_index(list(picked), ids).to(logits.device), torch.cat(ids).to(logits.device)),
            -torch.cat(offsets).to(logits.device, logits.dtype),
            accumulate=True,
        )


def _row_index(indices: list[int], ids: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat(
        [torch.full((t.numel(),), i, dtype=torch.long) for i, t in zip(indices, ids, strict=True)]
    )

"""`ngram`: windowed no-repeat n-gram ban.

A token is banned (logit -inf) when it would complete an n-gram that already occurs entirely
within the last `window` tokens (prompt included, as HF's `no_repeat_ngram_size`; with
window=None it is exactly HF's rule). State per row: for each (n-1)-gram, the latest start of
each n-gram that continued it; O(n) per token to update, O(followers) to query, no rescans.
"""

from __future__ import annotations

import torch
from pydantic import Field

from loopfix.guards.base import Guard, GuardParams, Row

__all__ = ["NgramGuard", "NgramParams"]


class NgramParams(GuardParams):
    size: int = Field(3, ge=1, description="n of the banned n-grams")
    window: int | None = Field(
        512, ge=1, description="only n-grams inside the last `window` tokens count; None = all"
    )


class NgramGuard(Guard):
    name = "ngram"
    Params = NgramParams

    def start(self, row: Row) -> dict[tuple[int, ...], dict[int, int]]:
        return {}

    def observe(self, row: Row, token: int) -> None:
        size = row.params.size
        if len(row.tokens) < size:
            return
        start = len(row.tokens) - size
        prefix = tuple(row.tokens[start : start + size - 1])
        row.state.setdefault(prefix, {})[token] = start

    def banned(self, row: Row) -> list[int]:
        params: NgramParams = row.params
        length = len(row.tokens)
        if length + 1 < params.size:
            return []
        prefix = tuple(row.tokens[length - params.size + 1 :]) if params.size > 1 else ()
        followers = row.state.get(prefix, {})
        # An earlier n-gram counts while its start lies within the last `window` tokens.
        oldest = -1 if params.window is None else length - params.window
        return [token for token, start in followers.items() if start >= oldest]

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        banned = self.banned(row)
        if banned:
            logits[torch.tensor(banned, dtype=torch.long, device=logits.device)] = -float("inf")

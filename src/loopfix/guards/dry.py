"""`dry`: "Don't Repeat Yourself" (llama.cpp semantics and defaults), maintained incrementally.

A token that would extend a suffix already seen in the context is penalised:
logit -= multiplier * base ** (length - allowed_length) for repeats of length >= allowed_length;
a suffix never spans a sequence breaker, and single-token breakers are never penalised (see
`dry_reference` for the exact rules). Defaults are llama.cpp's, except `multiplier`: llama.cpp
ships 0 (off); a guard that is asked for is on, with the usual 0.8.

Where llama.cpp recomputes a Z-algorithm pass over the context before every token (O(N)), this
guard keeps a suffix automaton per row (`suffix_automaton`) and answers the same question in
O(cap + penalised tokens) per token, cap = allowed_length + the exponent clamp (about 160 at base
1.75), independent of the context length. Exceptions, both exact but not incremental:
`window` (llama.cpp's `dry_penalty_last_n`) recomputes over the last `window` tokens, and
base <= 1 (no clamp) walks the whole suffix chain.

Breakers are strings; every vocabulary token whose text contains one is a single-token breaker
(as llama.cpp). Breakers that only appear split across several tokens are not recognised.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from pydantic import Field

from loopfix.guards.base import Guard, GuardParams, Row
from loopfix.guards.dry_reference import dry_penalties, dry_repeat_lengths, max_exponent
from loopfix.guards.suffix_automaton import SuffixAutomaton

__all__ = ["DEFAULT_BREAKERS", "DryGuard", "DryParams", "DryState"]

DEFAULT_BREAKERS = ("\n", ":", '"', "*")


class DryParams(GuardParams):
    multiplier: float = Field(0.8, ge=0.0, description="penalty scale (llama.cpp's default 0: off)")
    base: float = Field(1.75, ge=1.0, description="growth of the penalty per extra repeated token")
    allowed_length: int = Field(
        2, ge=1, description="longest repeat that goes unpenalised, in tokens"
    )
    breakers: tuple[str, ...] = Field(
        DEFAULT_BREAKERS, description="strings a repeated suffix may not span"
    )
    breaker_ids: tuple[int, ...] | None = Field(
        None, description="breaker token ids, used instead of mapping `breakers` via the tokenizer"
    )
    window: int | None = Field(
        None, ge=1, description="last tokens searched (llama.cpp penalty_last_n); None = all"
    )


@dataclass
class DryState:
    automaton: SuffixAutomaton | None  # None with a finite window (recomputed instead)
    breakers: frozenset[int]
    since_breaker: int  # tokens after the last breaker (= llama.cpp's repeat limit)
    seen_breaker: bool


class DryGuard(Guard):
    name = "dry"
    Params = DryParams

    def _breakers(self, params: DryParams) -> frozenset[int]:
        if params.breaker_ids is not None:
            return frozenset(params.breaker_ids)
        if self.context is None:
            raise ValueError(
                "guard 'dry' needs a GuardContext to map `breakers` (or `breaker_ids`)"
            )
        return self.context.tokens_containing(params.breakers, self.name)

    def start(self, row: Row) -> DryState:
        params: DryParams = row.params
        automaton = SuffixAutomaton() if params.window is None else None
        return DryState(automaton, self._breakers(params), 0, False)

    def observe(self, row: Row, token: int) -> None:
        state: DryState = row.state
        if state.automaton is not None:
            state.automaton.extend(token)
        if token in state.breakers:
            state.since_breaker, state.seen_breaker = 0, True
        else:
            state.since_breaker += 1

    def repeat_lengths(self, row: Row) -> dict[int, int]:
        """token -> the repeat length emitting it would extend (llama.cpp steps 1-3)."""
        params: DryParams = row.params
        state: DryState = row.state
        if state.automaton is None:
            return dry_repeat_lengths(
                row.tokens, params.allowed_length, state.breakers, params.window
            )
        size = len(row.tokens)
        limit = state.since_breaker if state.seen_breaker else size
        if size <= params.allowed_length or limit < params.allowed_length:
            return {}
        clamp = max_exponent(params.base)
        cap = min(limit, params.allowed_length + clamp) if clamp else limit
        return state.automaton.continuation_lengths(params.allowed_length, cap)

    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        params: DryParams = row.params
        if params.multiplier == 0.0:
            return
        penalties = dry_penalties(
            self.repeat_lengths(row),
            params.multiplier,
            params.base,
            params.allowed_length,
            row.state.breakers,
        )
        if penalties:
            tokens = torch.tensor(list(penalties), dtype=torch.long, device=logits.device)
            amounts = torch.tensor(
                list(penalties.values()), dtype=logits.dtype, device=logits.device
            )
            logits.index_put_((tokens,), logits[tokens] - amounts)

"""The think block as a guard sees it: the `<think>` / `</think>` markers as token sequences
(one token in Qwen3's vocabulary, three in SmolLM2's, `<`, `think`, `>`), whether a row is
inside the block, how many tokens it has thought, and the forcing of `</think>` one token per
step, so a think-escape or a thinking budget works on any vocabulary that can spell the marker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from loopfix.guards.base import GuardContext
from loopfix.guards.temperature import keep_only_
from loopfix.thinking import THINK_END, THINK_START

__all__ = ["ThinkBlock", "ThinkMarkers", "think_markers"]

LINE_BREAK = "\n"


@dataclass(frozen=True)
class ThinkMarkers:
    start: tuple[int, ...]
    end: tuple[int, ...]
    newline: tuple[int, ...]
    """The tokens of a line break (none where the vocabulary cannot spell one): written before
    `</think>` when forced mid-line, as a thinker whose marker stands on its own line was
    trained to see it."""


def think_markers(context: GuardContext | None) -> ThinkMarkers | None:
    """The markers' token sequences, or None when the vocabulary cannot spell both exactly.

    Each encoding is decoded back and must give the marker: a tokenizer without it may encode
    it to an unknown token (the testbed's maps `</think>` to `<pad>`)."""
    if context is None:
        return None
    start, end = _spelled(context, THINK_START), _spelled(context, THINK_END)
    if start is None or end is None:
        return None
    return ThinkMarkers(start, end, _spelled(context, LINE_BREAK) or ())


def _spelled(context: GuardContext, text: str) -> tuple[int, ...] | None:
    if context.encode is None or context.token_text is None:
        return None
    ids = tuple(context.encode(text))
    if not ids or "".join(context.token_text(token) for token in ids) != text:
        return None
    return ids


@dataclass
class ThinkBlock:
    """One row's view of its think block, fed every token (prompt first: chat templates often
    open the block in the prompt)."""

    markers: ThinkMarkers
    thinking: bool = False
    thought: int = 0  # generated tokens inside the block so far
    forcing: list[int] = field(default_factory=list)  # marker tokens still to force
    _tail: list[int] = field(default_factory=list)

    def observe(self, token: int, generated: bool) -> None:
        width = max(len(self.markers.start), len(self.markers.end))
        self._tail = [*self._tail[-(width - 1) :], token] if width > 1 else [token]
        if self.forcing and generated and token == self.forcing[0]:
            self.forcing.pop(0)
        if self._ends_with(self.markers.end):
            self.thinking, self.forcing = False, []
        elif self._ends_with(self.markers.start):
            self.thinking = True
        elif self.thinking and generated:
            self.thought += 1

    def _ends_with(self, marker: tuple[int, ...]) -> bool:
        return tuple(self._tail[-len(marker) :]) == marker

    def close(self, last_text: str) -> list[int]:
        """Start forcing `</think>`, after a newline unless `last_text` (the last generated
        token's text) ended a line; the tokens that will be forced."""
        newline = [] if last_text.endswith(LINE_BREAK) else list(self.markers.newline)
        self.forcing = [*newline, *self.markers.end]
        return list(self.forcing)

    def force(self, logits: torch.Tensor) -> bool:
        """Keep only the next marker token, if one is due; whether it was."""
        if not self.forcing:
            return False
        token = self.forcing[0]
        keep_only_(logits, token)
        if not torch.isfinite(logits[token]):  # an earlier guard banned it
            logits[token] = 0.0
        return True

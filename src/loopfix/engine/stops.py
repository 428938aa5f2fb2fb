"""Stop texts: a generation ends when its output shows one of them, as vLLM's `stop` does.

A completion-prompted base model has no end-of-turn token: it answers, then writes the next
`Question:` itself (`suites.render.stop_texts`). The engine checks after every step whether the
newest tokens complete a stop text, and the backend cuts the text before it; the tokens stay
what the model generated, as vLLM keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["Decode", "cut_at_stop", "stop_found"]

Decode = Callable[[Sequence[int]], str]


def stop_found(output: Sequence[int], texts: Sequence[str], decode: Decode) -> str | None:
    """The first of `texts` that the newest tokens of `output` contain, or None.

    Only the tail is decoded, so the check costs about the same at every step: a token decodes
    to at least one character, so a text of n characters that the newest token completes lies
    within the last n + 1 tokens (every earlier end was checked at its own step). Tokens that
    decode to nothing (skipped special tokens, pieces of a multi-byte character) widen the
    window until it holds as many characters.
    """
    if not texts:
        return None
    longest = max(map(len, texts))
    window = longest + 1
    tail = decode(output[-window:])
    while len(tail) < window and window < len(output):
        window *= 2
        tail = decode(output[-window:])
    return next((text for text in texts if text in tail), None)


def cut_at_stop(text: str, stop: str | None) -> str:
    """`text` up to its stop text (the first occurrence: the engine ended at it)."""
    index = -1 if stop is None else text.find(stop)
    return text if index < 0 else text[:index]

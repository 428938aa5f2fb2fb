"""The thinking block of a reasoning model's output: its markers, defined once, and where it
ends, so a scan, a checker and a guard agree on what is thought and what is answered."""

from __future__ import annotations

__all__ = ["THINK_END", "THINK_START", "answer_part", "thinking_end"]

THINK_START, THINK_END = "<think>", "</think>"


def thinking_end(text: str) -> int | None:
    """Where the thinking of `text` ends (the character after `</think>`; the text's end when
    it opened `<think>` and never closed it), or None when `text` holds no thinking marker.
    A chat template that opens the thought in the prompt leaves only `</think>` in the output,
    so either marker counts."""
    close = text.rfind(THINK_END)
    if close >= 0:
        return close + len(THINK_END)
    return len(text) if THINK_START in text else None


def answer_part(text: str) -> str:
    """What follows the last `</think>` (the whole text when the thinking never closed): the
    only place a checker looks for an answer."""
    close = text.rfind(THINK_END)
    return text if close < 0 else text[close + len(THINK_END) :]

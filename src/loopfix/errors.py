"""The base of the errors a user can fix (bad input, bad options, a mismatched file).

The command line prints any `LoopfixError` as one line and exits 2, without a traceback;
anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["LoopfixError", "one_line"]


class LoopfixError(Exception):
    """An error caused by the input or the options, whose message says what to change."""


def one_line(text: str) -> str:
    """Collapse a (possibly multi-line) message into one line."""
    return " ".join(text.split())

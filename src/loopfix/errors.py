"""The base of the errors a user can fix (bad input, bad options, a mismatched file).

The command line prints any `LoopfixError` as one line and exits 2, without a traceback;
anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["LoopfixError", "field_problem", "one_line"]


class LoopfixError(Exception):
    """An error caused by the input or the options, whose message says what to change."""


def one_line(text: str) -> str:
    """Collapse a (possibly multi-line) message into one line."""
    return " ".join(text.split())


def field_problem(where: str, error: ValidationError, kind: str) -> str:
    """The first problem pydantic found in a file, as one line naming the file (`where`), the
    field and what it expected: "f.json: edits[0].alpha: Input should be ... (got 'x')". `kind`
    names what the file is, for a field it should not have."""
    problem = error.errors()[0]
    field = ""
    for part in problem["loc"]:
        field += f"[{part}]" if isinstance(part, int) else f".{part}" if field else str(part)
    if problem["type"] == "missing":
        parent, _, name = field.rpartition(".")
        return f"{where}{': ' + parent if parent else ''} lacks {name!r}"
    if problem["type"] == "extra_forbidden":
        return f"{where}: {field} is not a field of {kind}"
    message = one_line(str(problem["msg"]).removeprefix("Value error, "))
    if not field:  # the whole text: not JSON, or its fields do not fit together
        return f"{where}: {'its text: ' if problem['type'] == 'json_invalid' else ''}{message}"
    shown = repr(problem["input"])
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"{where}: {field}: {message} (got {shown})"

"""How two tool calls, results or messages are judged "the same": text normalised so that
noise which changes between identical runs (white space, argument order, object addresses,
clock times) does not hide a repeat, while anything a polling agent is waiting for (counts,
statuses, progress numbers) still tells two results apart."""

from __future__ import annotations

import json
import re
from typing import Any

_SPACE = re.compile(r"\s+")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
# A wall-clock time (12:03:55, 12:03:55.123) changes on every call of an unchanged command.
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b")
_TAG = re.compile(r"</?[A-Za-z_][\w-]*>")
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
# A line that reports an error, as a traceback's last line or a shell or git says it: at the
# start of the line, so that source code which names an exception (`raise KeyError(`) is none.
# A bare non-zero exit code is no error here: `grep` says "no match" with it.
_ERROR_LINE = re.compile(
    r"^(?:[ \t]*(?:[\w.]*(?:Error|Exception)\b(?::|$)|(?:error|fatal)\b)|"
    r"[^\n]*?(?:\bcommand not found\b|\bNo such file or directory\b|\bPermission denied\b))"
    r"[^\n]*$",
    re.IGNORECASE | re.MULTILINE,
)
SHOWN_CHARS = 120
"""Longest excerpt of arguments or results a verdict shows."""


def collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def normalise_args(arguments: Any) -> str:
    """Arguments as one canonical string: a JSON object (or a JSON string holding one, as
    OpenAI's `function.arguments` is) with sorted keys and collapsed white space in every
    string value; anything else as collapsed text."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):  # not JSON, or nested past what json can read
            return collapse(arguments)
    return json.dumps(_collapse_strings(arguments), sort_keys=True, ensure_ascii=False)


def _collapse_strings(value: Any) -> Any:
    if isinstance(value, str):
        return collapse(value)
    if isinstance(value, dict):
        return {key: _collapse_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_collapse_strings(item) for item in value]
    return value


def normalise_result(text: str) -> str:
    return collapse(_CLOCK.sub("<time>", _ADDRESS.sub("0x<addr>", text)))


def is_trivial(result: str | None) -> bool:
    """A result that says (almost) nothing: empty output, a bare exit code, "OK". Different
    calls return it all the time (every edit, every `sleep`), so its repeating is no loop."""
    if result is None:
        return True
    return len(_WORD.findall(_TAG.sub(" ", result))) < 3


def error_signature(raw: str) -> str | None:
    """The error a result reports, or None: its last line that reports one (a traceback's
    last line), markup dropped and digits masked (line numbers move, the error stays)."""
    lines = _ERROR_LINE.findall(raw)
    return mask_numbers(collapse(_TAG.sub(" ", lines[-1]))) if lines else None


def mask_numbers(text: str) -> str:
    return _DIGITS.sub("#", text)


BACK_OFF_FACTOR = 1.5
"""Smallest growth, call to call, of a number that makes repeated arguments a back-off."""


def backs_off(args: list[str]) -> bool:
    """Arguments that differ only in numbers, each changing number growing by at least
    `BACK_OFF_FACTOR` from call to call: a wait with back-off (`sleep 5`, `sleep 10`,
    `sleep 20`) or a growing timeout. Pages or line ranges that move by a step (1, 2, 3 or
    `sed -n 1,40p`, `2,41p`) grow too slowly to be one."""
    if len({mask_numbers(arg) for arg in args}) != 1:
        return False
    series = [[int(n) for n in _DIGITS.findall(arg)] for arg in args]
    grew = False
    for earlier, later in zip(series, series[1:], strict=False):
        for before, after in zip(earlier, later, strict=True):
            if after != before and after < before * BACK_OFF_FACTOR:
                return False
            grew = grew or after != before
    return grew


def excerpt(text: str | None) -> str:
    if text is None:
        return "(no result)"
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."

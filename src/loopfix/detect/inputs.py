"""Texts to check, read from .txt files, JSONL files or stdin.

A JSONL record gives its text in a field (`text` by default); an OpenAI-style response record
gives one text per choice field: `choices[i].message.reasoning_content`, `.message.content`
(chat) or `choices[i].text` (completions). A line that cannot be checked (not UTF-8, not valid
JSON, nested deeper than the JSON parser recurses, or holding no text) comes back as an
`InputError` naming the line, and reading goes on, so nothing is skipped silently. Bytes that are
not UTF-8 are an error naming the line and byte offset, unless the caller asks to decode them with
replacement (`errors="replace"`). A UTF-8 byte order mark at the start of the input is dropped (an
editor's "UTF-8 with BOM"); an input with no text at all is an `EmptyInputError`.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from loopfix.detect.config import COUNT_LIMIT

FieldPath = tuple[str | int, ...]
Decoding = Literal["strict", "replace"]
"""How bytes that are not UTF-8 are read: an `InputError` for the line, or U+FFFD."""
BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte order mark; byte offsets in errors still count it, as they count the file."""
ID_FIELDS = ("id", "prompt_id")
"""Fields that name a record (OpenAI responses, loopfix scan records), first found wins."""


class EmptyInputError(ValueError):
    """An input with nothing to check: an empty verdict table would read as a pass."""


@dataclass(frozen=True)
class TextInput:
    """One text to check: its display id, where it sits in its record, and the text; `cut` when
    the record says whether the text was cut at the token limit (`finish_reason`), `cap` when it
    says the generation cap (`settings.max_new_tokens` of a loopfix scan record)."""

    id: str
    text: str
    line: int | None = None
    path: FieldPath = ()
    cut: bool | None = None
    cap: int | None = None


@dataclass(frozen=True)
class InputError:
    """A line that could not be checked, and why."""

    line: int
    column: int | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" + ("" if self.column is None else f", column {self.column}")
        return f"{where}: {self.message}"


@dataclass
class Record:
    """A parsed JSONL line with the texts found in it."""

    line: int
    raw: str
    data: Any
    texts: list[TextInput] = field(default_factory=list)


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str)) or None
    return None


def record_texts(data: Any, text_field: str) -> list[tuple[FieldPath, str]]:
    """The texts of a record, each with its path inside the record."""
    if not isinstance(data, dict):
        return []
    found: list[tuple[FieldPath, str]] = []
    if isinstance(data.get(text_field), str):
        found.append(((text_field,), data[text_field]))
    for index, choice in enumerate(data.get("choices") or []):
        if not isinstance(choice, dict):
            continue
        if isinstance(choice.get("text"), str):
            found.append((("choices", index, "text"), choice["text"]))
        message = choice.get("message")
        if isinstance(message, dict):
            for key in ("reasoning_content", "content"):
                text = _content_text(message.get(key))
                if text is not None:
                    found.append((("choices", index, "message", key), text))
    return found


def text_cut(data: Any, path: FieldPath, last_of_choice: bool) -> bool | None:
    """Whether the text at `path` was cut at the token limit, from the `finish_reason` of its
    choice (only its last text: a reasoning trace followed by content was not cut) or of the
    record; None when unknown."""
    if path[0] == "choices":
        reason = data["choices"][path[1]].get("finish_reason") if last_of_choice else "stop"
    else:
        reason = data.get("finish_reason")
    # "repetition" (a server or the cut guard ended a loop) is cut as the scan judges it.
    return None if not isinstance(reason, str) else reason in ("length", "repetition")


def record_cap(data: Any) -> int | None:
    """The generation cap a loopfix scan record was decoded under, when it holds a usable one."""
    settings = data.get("settings") if isinstance(data, dict) else None
    cap = settings.get("max_new_tokens") if isinstance(settings, dict) else None
    usable = isinstance(cap, int) and not isinstance(cap, bool) and 1 <= cap <= COUNT_LIMIT
    return cap if usable else None


def path_name(path: FieldPath) -> str:
    """`("choices", 0, "message", "content")` -> `choices[0].message.content`."""
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else part)
    return name


def _not_utf8(byte: int, offset: int, line: int) -> InputError:
    """The error for `byte`, found at the file's byte `offset`, on `line` (from 1)."""
    return InputError(
        line,
        None,
        f"byte 0x{byte:02x} at byte offset {offset} is not UTF-8 "
        "(decode with replacement characters: --errors replace)",
    )


def _bom_length(data: bytes) -> int:
    return len(BOM) if data.startswith(BOM) else 0


def decode_lines(lines: Iterable[bytes], errors: Decoding = "strict") -> Iterator[str | InputError]:
    """Each line (split on newlines only, without its newline) as text, or an `InputError`
    naming the line and the file's byte offset of the first byte that is not UTF-8."""
    offset = 0
    for number, raw in enumerate(lines, 1):
        start = _bom_length(raw) if number == 1 else 0
        try:
            yield raw[start:].removesuffix(b"\n").decode("utf-8", errors=errors)
        except UnicodeDecodeError as error:
            yield _not_utf8(raw[start + error.start], offset + start + error.start, number)
        offset += len(raw)


def _parse(raw: str, number: int) -> Any | InputError:
    """The JSON value of line `number`, or an `InputError` saying why it has none."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as error:
        return InputError(number, error.colno, error.msg)
    except RecursionError:
        # json recurses once per nesting level; a hostile line of `[[[[...` exhausts the stack.
        return InputError(number, None, "JSON nested too deeply to parse")


def _record_id(data: Any, number: int) -> str:
    """The record's own name (`id`, else `prompt_id`), else its line number."""
    if isinstance(data, dict):
        for key in ID_FIELDS:
            value = data.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                return str(value)
    return str(number)


def _no_text(data: Any, text_field: str) -> str:
    if not isinstance(data, dict):
        return f"not a JSON object but {type(data).__name__}: nothing to check"
    if "choices" in data:
        return (
            f"no text to check: no string field {text_field!r}, and its choices hold no "
            "text or message.content/reasoning_content"
        )
    return f"no text to check: no string field {text_field!r} (choose one with --field)"


def read_records(
    lines: Iterable[str | InputError], text_field: str
) -> Iterator[Record | InputError]:
    """Parse JSONL lines (blank lines are skipped); a line with no text is an `InputError`."""
    for number, raw in enumerate(lines, 1):
        if isinstance(raw, InputError):
            yield raw
            continue
        if not raw.strip():
            continue
        data = _parse(raw, number)
        if isinstance(data, InputError):
            yield data
            continue
        record = Record(number, raw, data)
        base, cap = _record_id(data, number), record_cap(data)
        found = record_texts(data, text_field)
        for index, (path, text) in enumerate(found):
            label = base if path == (text_field,) else f"{base}:{path_name(path)}"
            last = index + 1 == len(found) or found[index + 1][0][:2] != path[:2]
            cut = text_cut(data, path, last)
            record.texts.append(TextInput(label, text, number, path, cut, cap))
        yield record if record.texts else InputError(number, None, _no_text(data, text_field))


def read_inputs(
    source: str, text_field: str = "text", errors: Decoding = "strict"
) -> Iterator[TextInput | InputError]:
    """Texts from `source`: a .jsonl file, any other file read as one text, or `-` for stdin
    (JSONL when its first non-blank character is `{`, else one text). An input holding nothing
    but white space (an empty file, /dev/null, empty stdin) raises `EmptyInputError`, whatever
    its kind."""
    if source == "-":
        content = sys.stdin.buffer.read()
        is_jsonl = content.removeprefix(BOM).lstrip().startswith(b"{")
        name = "stdin"
    else:
        path = Path(source)
        content = path.read_bytes()
        is_jsonl = path.suffix.lower() == ".jsonl"
        name = path.stem
    if not content.removeprefix(BOM).strip():
        raise EmptyInputError(f"{'stdin' if source == '-' else source}: empty, nothing to check")
    if not is_jsonl:
        yield _whole_text(name, content, errors)
        return
    for item in read_records(decode_lines(io.BytesIO(content), errors), text_field):
        if isinstance(item, InputError):
            yield item
        else:
            yield from item.texts


def _whole_text(name: str, content: bytes, errors: Decoding) -> TextInput | InputError:
    """A file that is not JSONL as one text (a leading byte order mark dropped)."""
    start = _bom_length(content)
    try:
        return TextInput(name, content[start:].decode("utf-8", errors=errors))
    except UnicodeDecodeError as error:
        offset = start + error.start
        return _not_utf8(content[offset], offset, content.count(b"\n", 0, offset) + 1)


def set_path(data: Any, path: FieldPath, value: str) -> None:
    """Set the value at `path` inside a parsed record."""
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value

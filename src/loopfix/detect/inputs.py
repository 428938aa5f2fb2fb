"""Texts to check, read from .txt files, JSONL files or stdin.

A JSONL record gives its text in a field (`text` by default); an OpenAI-style response record
gives one text per choice field: `choices[i].message.reasoning_content`, `.message.content`
(chat) or `choices[i].text` (completions). Lines that are not valid JSON come back as
`InputError`s naming the line and column, and reading goes on.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FieldPath = tuple[str | int, ...]


@dataclass(frozen=True)
class TextInput:
    """One text to check: its display id, where it sits in its record, and the text."""

    id: str
    text: str
    line: int | None = None
    path: FieldPath = ()


@dataclass(frozen=True)
class InputError:
    """A line that could not be read."""

    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"


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


def path_name(path: FieldPath) -> str:
    """`("choices", 0, "message", "content")` -> `choices[0].message.content`."""
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else part)
    return name


def read_records(lines: Iterator[str], text_field: str) -> Iterator[Record | InputError]:
    """Parse JSONL lines (blank lines are skipped)."""
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as error:
            yield InputError(number, error.colno, error.msg)
            continue
        record = Record(number, raw, data)
        base = str(data.get("id", number)) if isinstance(data, dict) else str(number)
        for path, text in record_texts(data, text_field):
            label = base if path == (text_field,) else f"{base}:{path_name(path)}"
            record.texts.append(TextInput(label, text, number, path))
        yield record


def read_inputs(source: str, text_field: str = "text") -> Iterator[TextInput | InputError]:
    """Texts from `source`: a .jsonl file, any other file read as one text, or `-` for stdin
    (JSONL when its first non-blank character is `{`, else one text)."""
    if source == "-":
        content = sys.stdin.read()
        is_jsonl = content.lstrip().startswith("{")
        name = "stdin"
    else:
        path = Path(source)
        content = path.read_text(encoding="utf-8")
        is_jsonl = path.suffix.lower() == ".jsonl"
        name = path.stem
    if not is_jsonl:
        yield TextInput(name, content)
        return
    for item in read_records(iter(content.splitlines()), text_field):
        if isinstance(item, InputError):
            yield item
        else:
            yield from item.texts


def set_path(data: Any, path: FieldPath, value: str) -> None:
    """Set the value at `path` inside a parsed record."""
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value

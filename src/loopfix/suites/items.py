"""The suite item and the JSON-lines suite file format.

One line per item: `id`, `prompt` (a string) or `messages` (a chat, a list of
`{"role", "content"}`), optional `answer`, optional `checker` (`exact`, `boxed`, `numeric`,
`final-number`, `sequence`, `stargraph`, `tasks`, `think`, or `regex:PATTERN`), and free `meta`. A
malformed line is an error that names the file, the line and the field, never a skipped item.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopfix.errors import LoopfixError
from loopfix.lab.stargraph import StarGraph
from loopfix.lab.think_teacher import THINK_FAMILIES

__all__ = ["CHECKERS", "SuiteError", "SuiteItem", "parse_item", "read_suite_file"]

CHECKERS: tuple[str, ...] = (
    "exact",
    "boxed",
    "numeric",
    "final-number",
    "sequence",
    "stargraph",
    "tasks",
    "think",
)
_FIELDS = {"id", "prompt", "messages", "answer", "checker", "meta"}


class SuiteError(LoopfixError, ValueError):
    """A suite that cannot be used: names the file, line and field where it can."""


@dataclass(frozen=True)
class SuiteItem:
    """One prompt of a suite, with what a correct answer is and how to check it."""

    id: str
    prompt: str | None = None
    messages: list[dict[str, str]] | None = None
    answer: str | None = None
    checker: str | None = None  # None: correctness is not judged
    # Free, as the suite file gives it: each checker reads and checks the fields it needs.
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"id": self.id}
        for name in ("prompt", "messages", "answer", "checker"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        if self.meta:
            data["meta"] = self.meta
        return data


def _check_messages(value: object) -> str | None:
    """The problem with a `messages` value, or None when it is a valid chat."""
    if not isinstance(value, list) or not value:
        return "must be a non-empty list of {role, content} objects"
    for position, message in enumerate(value):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            return f"item {position} must be an object with exactly 'role' and 'content'"
        if not all(isinstance(message[key], str) for key in ("role", "content")):
            return f"item {position}: 'role' and 'content' must be strings"
    return None


def _check_checker(value: object) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    if value.startswith("regex:"):
        try:
            re.compile(value.removeprefix("regex:"))
        except re.error as error:
            return f"invalid regular expression: {error}"
        return None
    if value not in CHECKERS:
        return f"unknown checker {value!r}; use one of {', '.join(CHECKERS)} or regex:PATTERN"
    return None


def _field_problem(data: dict[str, object]) -> tuple[str, str] | None:
    """The first (field, problem) of a parsed line, or None when the line is a valid item."""
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        return unknown[0], f"unknown field; allowed: {', '.join(sorted(_FIELDS))}"
    if not isinstance(data.get("id"), str) or not data["id"]:
        return "id", "required, a non-empty string"
    if ("prompt" in data) == ("messages" in data):
        return "prompt", "exactly one of 'prompt' and 'messages' is required"
    if "prompt" in data and not (isinstance(data["prompt"], str) and data["prompt"].strip()):
        return "prompt", "must be a string with more than white space (a model needs a prompt)"
    if "messages" in data and (problem := _check_messages(data["messages"])):
        return "messages", problem
    if "answer" in data and not isinstance(data["answer"], (str, int, float)):
        return "answer", "must be a string or a number"
    if "checker" in data and (problem := _check_checker(data["checker"])):
        return "checker", problem
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        return "meta", "must be an object"
    return _meta_problem(data.get("checker"), meta)


def _meta_problem(checker: object, meta: dict[str, Any]) -> tuple[str, str] | None:
    """What the item's checker reads from `meta`, checked before generating, not after."""
    given = meta.get("given", [])
    if checker == "sequence" and not (
        isinstance(given, list) and all(type(term) is int for term in given)
    ):
        return "meta.given", "must be a list of whole numbers (the terms the prompt gives)"
    if checker == "tasks" and not (
        isinstance(meta.get("family"), str) and isinstance(meta.get("items"), list)
    ):
        return "meta", "a tasks item needs 'family' (a string) and 'items' (a list)"
    if checker == "think" and meta.get("family") not in THINK_FAMILIES:
        return "meta.family", f"a think item needs its family, one of {', '.join(THINK_FAMILIES)}"
    if checker == "stargraph":
        try:
            StarGraph.from_dict(meta.get("graph"))
        except ValueError:
            return "meta.graph", "must be the graph: root, arms, edges, target_arm (as drawn)"
    return None


def parse_item(data: object, where: str) -> SuiteItem:
    """Validate one decoded line; `where` (file:line) prefixes every error."""
    if not isinstance(data, dict):
        raise SuiteError(f"{where}: a suite line must be a JSON object")
    if problem := _field_problem(data):
        raise SuiteError(f"{where}: field '{problem[0]}': {problem[1]}")
    answer = data.get("answer")
    # An answer without a checker is compared exactly; no answer and no checker: not judged.
    checker = data.get("checker", "exact" if answer is not None else None)
    return SuiteItem(
        id=data["id"],
        prompt=data.get("prompt"),
        messages=data.get("messages"),
        answer=None if answer is None else str(answer),
        checker=checker,
        meta=data.get("meta", {}),
    )


def read_suite_file(path: Path) -> list[SuiteItem]:
    """All items of a JSON-lines suite file (blank lines allowed; ids must be unique)."""
    items: list[SuiteItem] = []
    seen: set[str] = set()
    with Path(path).open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise SuiteError(
                    f"{where}: byte 0x{raw[error.start]:02x} at column {error.start + 1} is not "
                    "UTF-8 (a suite must be UTF-8 text)"
                ) from None
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                raise SuiteError(f"{where}: not valid JSON: {error.msg}") from error
            item = parse_item(data, where)
            if item.id in seen:
                raise SuiteError(f"{where}: field 'id': duplicate id {item.id!r}")
            seen.add(item.id)
            items.append(item)
    if not items:
        raise SuiteError(f"{path}: the suite has no items")
    return items

"""Answer checkers: decide whether a generated text answers a suite item correctly.

Checkers read only the answer part of a text: what follows the last `</think>` when the model
reasoned first, else the whole text. A checker returns None when it cannot judge (no answer
given), which the summary counts as "not judged" rather than wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

from loopfix.lab.hints import strip_hints
from loopfix.lab.stargraph import StarGraph, score_walk, walk_from_text
from loopfix.suites.tasks import check_task
from loopfix.suites.think import check_think
from loopfix.thinking import answer_part

__all__ = [
    "ANSWER_PHRASES",
    "check_answer",
    "final_number",
    "last_boxed",
    "last_number",
    "phrased_number",
]

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_WHOLE_NUMBER = re.compile(r"\d+")


def _normalize(text: str) -> str:
    return " ".join(text.strip().rstrip(".").split()).casefold()


def _as_number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("$", "").strip())
    except ValueError:
        return None


def _same_value(given: str, answer: str) -> bool:
    given_number, answer_number = _as_number(given), _as_number(answer)
    if given_number is not None and answer_number is not None:
        return math.isclose(given_number, answer_number, rel_tol=1e-6, abs_tol=1e-9)
    return _normalize(given) == _normalize(answer)


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` (nested braces allowed), or None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, position = 1, start + len("\\boxed{")
    for index in range(position, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[position:index]
    return None  # unclosed: the answer was cut off


def last_number(text: str) -> str | None:
    found = _NUMBER.findall(text)
    return found[-1] if found else None


ANSWER_PHRASES: tuple[str, ...] = (r"answer\s*(?:is|=|:)",)
"""Phrases after which a model states its answer (case-insensitive: "the answer is", "Final
answer:", "answer = ..."). Chosen on 20 hand-judged SmolLM2 answers and checked on 20 others
(docs/real-model.md)."""

# Between the phrase and the answer: a colon, spaces, markdown bold, a dollar sign, "\(".
_LEAD = r"[\s:*$\\(]*"
# What a model writes after the phrase: a number, or a worked expression ("36 - 24 = 12").
_EXPRESSION = rf"({_NUMBER.pattern})((?:\s*[-+*/×÷=]\s*(?:{_NUMBER.pattern}))*)"
_PHRASES = [re.compile(phrase + _LEAD + _EXPRESSION, re.IGNORECASE) for phrase in ANSWER_PHRASES]


def phrased_number(text: str) -> str | None:
    """The number after the last answer phrase (`ANSWER_PHRASES`), or None. When a worked
    expression follows the phrase, its result (the number after its last "=") is the answer."""
    for phrase in _PHRASES:
        found = phrase.findall(text)
        if found:
            first, rest = found[-1]
            if "=" not in rest:
                return first
            return _NUMBER.findall(rest.rsplit("=", 1)[1])[0]
    return None


def final_number(text: str, stopped: bool = True) -> str | None:
    """A free-text answer's number, read in this order: the last `\\boxed{}`, else the number
    after the last answer phrase (`phrased_number`), else the last number of the text. A text
    cut at the token limit (`stopped` False) has no last number to go by: where the cut fell
    says nothing about the answer."""
    for extract in (last_boxed, phrased_number):
        found = extract(text)
        if found is not None:
            return found
    return last_number(text) if stopped else None


def _check_sequence(text: str, answer: str, meta: Mapping[str, object]) -> bool:
    # Terms are positive whole numbers below 1,000, so every digit run is one term; a model
    # that first repeats the given terms is not penalised for it, one that runs on past the
    # asked-for terms is.
    numbers = [int(number) for number in _WHOLE_NUMBER.findall(text)]
    given = meta.get("given", [])
    assert isinstance(given, list)  # of whole numbers: parse_item checked it
    if given and numbers[: len(given)] == given:
        numbers = numbers[len(given) :]
    return numbers == [int(number) for number in _WHOLE_NUMBER.findall(answer)]


def scored_walk(item_meta: Mapping[str, object], text: str, stopped: bool) -> list[int]:
    """The walk a star-graph answer names (`walk_from_text` on its answer part), without the
    hints a testbed trained with them writes when the item says so (`lab.hints`)."""
    walk = walk_from_text(answer_part(text), stopped)
    return strip_hints(walk) if item_meta.get("hints") else walk


def _check_stargraph(text: str, meta: Mapping[str, object], stopped: bool) -> bool:
    # The walk is read back from the words of the text, so the checker works on any backend's
    # output; EOS is not part of the text, so whether generation stopped comes separately.
    graph = StarGraph.from_dict(meta.get("graph"))  # parse_item checked it
    return score_walk(graph, scored_walk(meta, text, stopped)).success


def _compare(extract: Callable[[str], str | None]) -> Callable[[str, str], bool]:
    def compare(text: str, answer: str) -> bool:
        found = extract(text)
        return found is not None and _same_value(found, answer)

    return compare


_BY_NAME: dict[str, Callable[[str, str], bool]] = {
    "exact": lambda text, answer: _normalize(text) == _normalize(answer),
    "boxed": _compare(last_boxed),
    "numeric": _compare(last_number),
}


def check_answer(
    checker: str | None, text: str, answer: str | None, meta: Mapping[str, object], stopped: bool
) -> bool | None:
    """Whether `text` answers correctly under `checker`; None when there is nothing to judge.

    stopped: generation ended by itself (not cut at the token limit), which the stargraph
    checker requires of a successful walk and the tasks checker of a correct list.
    """
    if checker is None:
        return None
    if checker == "think":
        # The whole text: an answer inside a thought that never closed is no answer.
        return None if answer is None else check_think(text, answer, meta, stopped)
    part = answer_part(text)
    if checker == "stargraph":
        return _check_stargraph(part, meta, stopped)
    if checker == "tasks":
        return check_task(part, meta, stopped)
    if checker.startswith("regex:"):
        return re.search(checker.removeprefix("regex:"), part) is not None
    if answer is None:
        return None
    if checker == "sequence":
        return _check_sequence(part, answer, meta)
    if checker == "final-number":
        # A cut answer without a stated answer is wrong, not unjudged: it never answered.
        found = final_number(part, stopped)
        return found is not None and _same_value(found, answer)
    return _BY_NAME[checker](part, answer)

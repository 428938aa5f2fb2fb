"""Other harnesses' published stuck rules, written from their documentation as baselines for
docs/agents.md (not their code): OpenHands' stuck detector and gemini-cli's loop detection
service. Each is run as its harness runs it, after every step on the history so far, and
reports the first time it fires as an `AgentVerdict`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from loopfix.agents.detector import AgentVerdict, Kind, describe
from loopfix.agents.steps import SAY, Step

OPENHANDS_IDENTICAL = 4
"""OpenHands: the last 4 actions and the last 4 observations identical."""
OPENHANDS_ERRORS = 3
"""OpenHands: the last 3 actions identical and each answered by an error."""
OPENHANDS_MONOLOGUE = 3
"""OpenHands: the last 3 agent messages identical, with no observation between them."""
OPENHANDS_ALTERNATION = 6
"""OpenHands: the last 6 steps alternate between two action-observation pairs."""
GEMINI_TOOL_CALLS = 5
"""gemini-cli: the same tool name and arguments (hashed) this many calls in a row."""
GEMINI_CHUNK_CHARS = 50
GEMINI_CHUNK_REPEATS = 10
"""gemini-cli: a 50-character chunk of the model's text seen 10 times, close together."""

Rule = Callable[[list[Step]], tuple[Kind, int] | None]
"""A rule over the history so far: (kind, steps in the window that fired it) or None."""


def _all_equal(values: list[object]) -> bool:
    return len(set(values)) == 1


def _openhands(history: list[Step]) -> tuple[Kind, int] | None:
    def tail(n: int) -> list[Step]:
        return history[-n:] if len(history) >= n else []

    last = tail(OPENHANDS_ERRORS)
    if last and _all_equal([s.call for s in last]) and all(s.error for s in last):
        return "error-loop", OPENHANDS_ERRORS
    last = tail(OPENHANDS_MONOLOGUE)
    if last and all(s.name == SAY for s in last) and _all_equal([s.args for s in last]):
        return "monologue", OPENHANDS_MONOLOGUE
    last = tail(OPENHANDS_IDENTICAL)
    if last and _all_equal([s.pair for s in last]):
        return "identical-calls", OPENHANDS_IDENTICAL
    last = tail(OPENHANDS_ALTERNATION)
    if (
        last
        and _all_equal([s.pair for s in last[::2]])
        and _all_equal([s.pair for s in last[1::2]])
    ):
        return "alternation", OPENHANDS_ALTERNATION
    return None


def _gemini(history: list[Step]) -> tuple[Kind, int] | None:
    calls = 0
    for step in reversed(history):
        if step.name == SAY or step.call != history[-1].call:
            break
        calls += 1
    if calls >= GEMINI_TOOL_CALLS:
        return "identical-calls", GEMINI_TOOL_CALLS
    if history and history[-1].name == SAY and _chants(history[-1].args):
        return "monologue", 1
    return None


def _chants(text: str) -> bool:
    """A chunk of the text repeated `GEMINI_CHUNK_REPEATS` times, its copies on average no
    further apart than 1.5 chunks (gemini-cli's "chanting")."""
    positions: dict[str, list[int]] = {}
    for start in range(len(text) - GEMINI_CHUNK_CHARS + 1):
        positions.setdefault(text[start : start + GEMINI_CHUNK_CHARS], []).append(start)
    counts = Counter({chunk: len(found) for chunk, found in positions.items()})
    for chunk, count in counts.most_common():
        if count < GEMINI_CHUNK_REPEATS:
            return False
        found = positions[chunk][-GEMINI_CHUNK_REPEATS:]
        if (found[-1] - found[0]) / (len(found) - 1) <= 1.5 * GEMINI_CHUNK_CHARS:
            return True
    return False


def _first_firing(rule: Rule, steps: list[Step]) -> AgentVerdict:
    for end in range(1, len(steps) + 1):
        fired = rule(steps[:end])
        if fired is not None:
            kind, window = fired
            first = steps[end - window]
            return AgentVerdict(
                stuck=True,
                kind=kind,
                onset_turn=first.turn,
                repeats=window,
                unit=tuple(dict.fromkeys(describe(s) for s in steps[end - window : end])),
                ongoing=end == len(steps),
            )
    return AgentVerdict(stuck=False)


def openhands_verdict(steps: list[Step]) -> AgentVerdict:
    return _first_firing(_openhands, steps)


def gemini_verdict(steps: list[Step]) -> AgentVerdict:
    return _first_firing(_gemini, steps)


BASELINES: dict[str, Callable[[list[Step]], AgentVerdict]] = {
    "openhands": openhands_verdict,
    "gemini-cli": gemini_verdict,
}

"""Hints at the student's highest-loss positions (seed 001, 4.1: "at the positions where the
student's loss is especially high, insert intermediate hint labels into the training data,
e.g. mark the key turning step with 'apply the law of cosines here'").

Walk positions are of four kinds, by what the student predicts there: `start` (the root, after
the prompt), `arm choice` (the arm to enter, at the root), `in arm` (the next node, `back` or
EOS) and `return` (the root, after `back`). A first phase trains without hints; at its last
step the student's mean loss per kind is measured on that step's batch and the kind with the
highest loss is chosen; from then on a hint is inserted before every walk token of that kind.

The hint is the intermediate steps of the hard lookup: `? target ... first :`, the target's arm
read backwards from the target to its first node (each step a one-edge lookup in the prompt),
between the existing markers `?` and `:`, so no new token enters the vocabulary. The hint
carries loss: the student learns to write it, as a reasoning model learns to write its
annotations, and at evaluation it writes its own hints (none are given). Scoring reads the walk
with the hints taken out (`strip_hints`); the loop detector sees the text as generated.
"""

from __future__ import annotations

from loopfix.lab.stargraph import ANSWER, BACK_ID, QUERY, TOKEN_ID, StarGraph

__all__ = [
    "HINT_PROBE_SHARE",
    "POSITION_KINDS",
    "hint_span",
    "insert_hints",
    "position_kinds",
    "strip_hints",
]

POSITION_KINDS: tuple[str, ...] = ("start", "arm choice", "in arm", "return")
HINT_PROBE_SHARE = 0.25  # the share of steps trained without hints, ending with the probe
_OPEN, _CLOSE = TOKEN_ID[QUERY], TOKEN_ID[ANSWER]


def position_kinds(walk: list[int]) -> list[int]:
    """Per walk token: the index in POSITION_KINDS of what predicting it is."""
    kinds = []
    for index in range(len(walk)):
        if index == 0:
            kinds.append(0)
        elif walk[index - 1] == BACK_ID:
            kinds.append(3)
        elif index == 1 or (index >= 3 and walk[index - 2] == BACK_ID):
            kinds.append(1)
        else:
            kinds.append(2)
    return kinds


def hint_span(graph: StarGraph) -> list[int]:
    """`? target ... first :`: the target's arm from the target back to its first node."""
    return [_OPEN, *reversed(graph.arms[graph.target_arm]), _CLOSE]


def insert_hints(walk: list[int], graph: StarGraph, kind: int) -> list[int]:
    """The walk with the hint before every token whose position is of `kind`."""
    hinted: list[int] = []
    for token, token_kind in zip(walk, position_kinds(walk), strict=True):
        hinted += (hint_span(graph) if token_kind == kind else []) + [token]
    return hinted


def strip_hints(walk: list[int]) -> list[int]:
    """The walk without its `? ... :` spans (an unclosed `?` runs to the end)."""
    kept: list[int] = []
    inside = False
    for token in walk:
        if token == _OPEN and not inside:
            inside = True
        elif inside:
            inside = token != _CLOSE
        else:
            kept.append(token)
    return kept

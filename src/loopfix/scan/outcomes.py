"""Where each sample went: one outcome class per record, by the suite's classifier.

Every suite gets the generic classes; a suite whose checker can say more adds its own. The
star graph's (`stargraph` checker) split a failed walk the way the testbed's evaluator always
has: a loop, the cap reached without a loop, a stop at a wrong node, or an illegal move.
Loop is `is_loop`, the one loop definition, in every classifier.
"""

from __future__ import annotations

from loopfix.lab.stargraph import StarGraph, score_walk
from loopfix.records import Sample
from loopfix.scan.summary import is_loop
from loopfix.suites import SuiteItem
from loopfix.suites.checkers import scored_walk

__all__ = ["GENERIC_OUTCOMES", "STARGRAPH_OUTCOMES", "classify_outcome", "outcome_classes"]

GENERIC_OUTCOMES = ("correct", "loop", "cap_without_loop", "wrong_stop", "unjudged")
STARGRAPH_OUTCOMES = ("success", "loop", "wrong_stop", "illegal", "cap_without_loop")


def outcome_classes(checker: str | None) -> tuple[str, ...]:
    return STARGRAPH_OUTCOMES if checker == "stargraph" else GENERIC_OUTCOMES


def classify_outcome(item: SuiteItem, sample: Sample) -> str:
    """The class of one generated sample (a failed request is "error")."""
    if sample.finish_reason == "error":
        return "error"
    stargraph = item.checker == "stargraph"
    if sample.correct:
        return "success" if stargraph else "correct"
    if is_loop(sample):
        return "loop"
    if sample.finish_reason == "length":
        return "cap_without_loop"
    if stargraph:
        walk = scored_walk(item.meta, sample.text, stopped=True)
        valid = score_walk(StarGraph.from_dict(item.meta["graph"]), walk).valid
        return "wrong_stop" if valid else "illegal"
    return "unjudged" if sample.correct is None else "wrong_stop"

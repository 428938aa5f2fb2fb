"""`recommend`: the decode setting and guard that remove the most loops without losing accuracy.

Candidates: every measured temperature without a guard, and every compared guard at the
loopiest temperature. The reference accuracy is the best judged accuracy of any temperature
without a guard (what a user gets today by choosing the temperature). A candidate keeps
accuracy when its accuracy is at least the reference's; among those, the one with the lowest
cut rate wins (a cut answer is lost whether or not the detector calls it a loop; guards that
only disguise a loop keep it cut), then the lowest loop rate, then the highest accuracy. The
reference itself always qualifies, so there is always an answer. Without any judged accuracy
(a suite without checkers) candidates are ranked by cut rate alone, and the reason says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopfix.doctor.result import GuardStage, MeasureStage, Recommendation

__all__ = ["recommend"]


@dataclass(frozen=True)
class _Candidate:
    temperature: float
    guard: str
    loop_rate: float | None
    cut_rate: float | None
    accuracy: float | None
    n: int

    def numbers(self) -> dict[str, object]:
        return {
            "temperature": self.temperature,
            "guard": self.guard,
            "n": self.n,
            "loop_rate": self.loop_rate,
            "cut_rate": self.cut_rate,
            "accuracy": self.accuracy,
        }


def _candidates(measure: MeasureStage, guards: GuardStage) -> list[_Candidate]:
    found = [
        _Candidate(s.temperature, "none", s.loop_rate, s.cut_rate, s.accuracy, s.n)
        for s in measure.settings
        if s.n
    ]
    found += [
        _Candidate(
            e["temperature"], e["guard"], e["loop_rate"], e["cut_rate"], e["accuracy"], e["n"]
        )
        for e in guards.entries
        if e["guard"] != "none" and e["n"]
    ]
    return found


def _percent(value: float | None) -> str:
    return "unjudged" if value is None else f"{value:.1%}"


def recommend(measure: MeasureStage, guards: GuardStage) -> Recommendation:
    candidates = _candidates(measure, guards)
    loopiest = measure.loopiest
    baseline = _Candidate(
        loopiest.temperature,
        "none",
        loopiest.loop_rate,
        loopiest.cut_rate,
        loopiest.accuracy,
        loopiest.n,
    )
    judged = [c.accuracy for c in candidates if c.guard == "none" and c.accuracy is not None]
    reference = max(judged) if judged else None
    keep = [
        c
        for c in candidates
        if reference is None or (c.accuracy is not None and c.accuracy >= reference)
    ]
    best = min(
        keep,
        key=lambda c: (
            c.cut_rate if c.cut_rate is not None else 1.0,
            c.loop_rate if c.loop_rate is not None else 1.0,
            -(c.accuracy or 0.0),
            c.temperature,
            c.guard != "none",
        ),
    )
    setting = f"T={best.temperature:g} with guard {best.guard}"
    if measure.loops == 0:
        reason = f"no sample looped at any temperature; {setting} has the best accuracy"
    else:
        reason = (
            f"{setting}: cut {_percent(best.cut_rate)}, loops {_percent(best.loop_rate)}, "
            f"accuracy {_percent(best.accuracy)}, against cut {_percent(baseline.cut_rate)}, "
            f"loops {_percent(baseline.loop_rate)}, accuracy {_percent(baseline.accuracy)} at "
            f"the loopiest setting (T={baseline.temperature:g}, no guard)"
        )
        reason += (
            "; accuracy is not judged on this suite, so the choice rests on the cut rate alone"
            if reference is None
            else f"; no candidate with accuracy below {_percent(reference)} (the best "
            "temperature without a guard) was considered"
        )
    return Recommendation(
        temperature=best.temperature,
        guard=best.guard,
        loop_rate=best.loop_rate,
        cut_rate=best.cut_rate,
        accuracy=best.accuracy,
        baseline=baseline.numbers(),
        reference_accuracy=reference,
        reason=reason,
    )

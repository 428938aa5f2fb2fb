"""`recommend`: the decode setting and guard that recover the most answers without a
significant loss.

Candidates: every measured temperature without a guard, and every compared guard at the
loopiest temperature T*. Every candidate is counted against one reference, the loopiest setting
without a guard (T*, no guard), in answers: its rescues (samples wrong there and right here),
its regressions (the reverse), McNemar's exact p on them, and its net answers (rescues minus
regressions). How the pairs are made differs, and the numbers say which:

- a guard at T* is paired with the guard stage's own `none` run at T* on (prompt, sample): the
  same prompts and the same seeds, so the pairs are exact (the compare's rescues/regressions);
- a temperature T without a guard is paired with T* in the measure scan on (prompt, sample):
  the same prompts, but a sample at another temperature is another draw, not the same one with
  one thing changed, so these pairs are prompt-matched only. Their net is still exactly the
  difference in correct answers on the same prompts (the quantity the guards' net measures),
  and their McNemar p is a valid test on matched prompts, only with more discordant pairs from
  sampling noise, so it is less likely to call a loss significant. The measure stage pairs
  them once, when it has scanned (`MeasureStage.paired`); a temperature with no pair counts
  as unpaired (net 0).

A candidate has a significant loss when its regressions outnumber its rescues and McNemar's
exact p is below 0.05 (`significant_loss`); such a candidate is never recommended. Among the
rest the ranking is the one `loopfix compare` uses (`answers_first`): the most net answers,
then the fewest regressions, then the lowest cut rate (a cut answer is lost whether or not the
detector calls it a loop), loop rate and mean length (tokens spent); on a full tie the lower
temperature, then no guard. The reference scores 0 / 0 and always qualifies, so there is
always an answer, and it never has fewer net answers than the reference. Because net answers
are differences in correct answers on the same prompts, the winner also has at least the
accuracy of the best temperature without a guard (`reference_accuracy`) up to the two `none`
runs at T* differing by their draws when T* > 0.

Without any judged accuracy (a suite without checkers) there are no answers to count: every
candidate has 0 / 0, the ranking falls back to the cut rate, then loop rate and tokens, and the
reason says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from loopfix.doctor.result import GuardStage, MeasureStage, Recommendation
from loopfix.guard_summaries import Answers
from loopfix.scan.guard_comparison import answers_first, net_answers, significant_loss
from loopfix.summaries import SettingSummary

__all__ = ["Candidate", "recommend"]

# How a candidate's answers were counted against the loopiest setting (see the docstring).
Pairing = Literal["itself", "exact", "prompt", "unpaired"]


@dataclass(frozen=True)
class Candidate:
    """A decode setting the doctor may recommend: a temperature without a guard, or a guard at
    the loopiest temperature (`scan.guard_comparison.Ranked`)."""

    guard: str
    summary: SettingSummary
    answers: Answers | None  # None: the guard's runs had no pairs
    paired: Pairing


def _temperature_answers(measure: MeasureStage, s: SettingSummary) -> tuple[Answers, Pairing]:
    """Rescues / regressions / p of temperature `s` against the loopiest, on (prompt, sample)."""
    if s.temperature == measure.loopiest.temperature:
        return Answers(0, 0, 1.0), "itself"
    paired = measure.paired.get(s.temperature)
    return (Answers(0, 0, None), "unpaired") if paired is None else (Answers.of(paired), "prompt")


def _candidates(measure: MeasureStage, guards: GuardStage) -> list[Candidate]:
    found = [
        Candidate("none", s, *_temperature_answers(measure, s)) for s in measure.settings if s.n
    ]
    found += [
        Candidate(e.guard, e.summary, e.answers, "exact")
        for e in guards.entries
        if e.guard != "none" and e.summary.n
    ]
    return found


def _percent(value: float | None) -> str:
    return "unjudged" if value is None else f"{value:.1%}"


def _answers(c: Candidate) -> str:
    answers = c.answers or Answers(0, 0, None)
    p = "" if answers.mcnemar_p is None else f", McNemar p {answers.mcnemar_p:.2g}"
    how = {"exact": "paired on the same seeds", "prompt": "paired on the same prompts"}.get(
        c.paired, "not paired"
    )
    return (
        f"{answers.rescues} answers rescued, {answers.regressions} lost "
        f"(net {net_answers(c):+d}{p}; {how})"
    )


def recommend(measure: MeasureStage, guards: GuardStage) -> Recommendation:
    candidates = _candidates(measure, guards)
    loopiest = measure.loopiest
    judged_settings = [
        s.accuracy.value for s in measure.settings if s.n and s.accuracy.value is not None
    ]
    reference = max(judged_settings) if judged_settings else None
    judged = any(c.summary.accuracy.value is not None for c in candidates)
    keep = [c for c in candidates if not significant_loss(c)]
    best = min(
        keep,
        key=lambda c: (answers_first(c), c.summary.temperature, c.guard != "none"),
    )
    chosen = best.summary
    setting = f"T={chosen.temperature:g} with guard {best.guard}"
    against = f"T={loopiest.temperature:g} without a guard (the loopiest setting)"
    numbers = (
        f"cut {_percent(chosen.cut_rate.value)}, loops {_percent(chosen.loop_rate.value)}, "
        f"accuracy {_percent(chosen.accuracy.value)}, against cut "
        f"{_percent(loopiest.cut_rate.value)}, loops {_percent(loopiest.loop_rate.value)}, "
        f"accuracy {_percent(loopiest.accuracy.value)} at {against}"
    )
    if measure.loops == 0:
        reason = f"no sample looped at any temperature; {setting} recovers the most answers"
    elif not judged:
        reason = (
            f"{setting}: {numbers}; accuracy is not judged on this suite, so no answers could "
            "be counted and the choice rests on the cut rate (then loop rate, then tokens)"
        )
    else:
        dropped = len(candidates) - len(keep)
        reason = (
            f"{setting}: {_answers(best)} against {against}; {numbers}; ranked by net answers "
            "recovered, then fewest lost, cut rate, loop rate and tokens"
        )
        if dropped:
            reason += f"; {dropped} candidate(s) with a significant loss of answers were excluded"
    return Recommendation(
        temperature=chosen.temperature,
        guard=best.guard,
        loop_rate=chosen.loop_rate.value,
        cut_rate=chosen.cut_rate.value,
        accuracy=chosen.accuracy.value,
        baseline=loopiest,
        reference_accuracy=reference,
        reason=reason,
    )

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
  sampling noise, so it is less likely to call a loss significant. Where the measure's records
  cannot be read, the net comes from the counts (accuracy x judged at T minus at T*), split
  into rescues or regressions, with no p.

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

from pathlib import Path
from typing import Any

from loopfix.doctor.result import GuardStage, MeasureSetting, MeasureStage, Recommendation
from loopfix.records import read_samples
from loopfix.scan.compare import compare_samples
from loopfix.scan.guard_comparison import answers_first, net_answers, significant_loss

__all__ = ["recommend"]

_KEYS = ("temperature", "guard", "n", "loop_rate", "cut_rate", "accuracy", "mean_length")


def _setting(s: MeasureSetting) -> dict[str, Any]:
    return {"temperature": s.temperature, "guard": "none", **{k: getattr(s, k) for k in _KEYS[2:]}}


def _correct(s: MeasureSetting) -> int | None:
    return None if s.accuracy is None else round(s.accuracy * s.judged)


def _temperature_pairs(measure: MeasureStage, s: MeasureSetting) -> dict[str, Any]:
    """Rescues / regressions / p of temperature `s` against the loopiest, on (prompt, sample)."""
    loopiest = measure.loopiest
    if s.temperature == loopiest.temperature:
        return {"rescued_samples": 0, "regressions": 0, "mcnemar_p": 1.0, "paired": "itself"}
    try:
        records = list(read_samples(Path(measure.scan) / "records.jsonl"))
        here = [r for r in records if r.settings["temperature"] == s.temperature]
        there = [r for r in records if r.settings["temperature"] == loopiest.temperature]
        paired = compare_samples(there, here).overall.to_json()
    except (OSError, ValueError):  # no records to pair: count the answers instead
        right_here, right_there = _correct(s), _correct(loopiest)
        net = 0 if right_here is None or right_there is None else right_here - right_there
        return {
            "rescued_samples": max(net, 0),
            "regressions": max(-net, 0),
            "mcnemar_p": None,
            "paired": "counted",
        }
    return {
        "rescued_samples": paired["rescues"],
        "regressions": paired["regressions"],
        "mcnemar_p": paired["mcnemar_p"],
        "paired": "prompt",
    }


def _candidates(measure: MeasureStage, guards: GuardStage) -> list[dict[str, Any]]:
    found = [{**_setting(s), **_temperature_pairs(measure, s)} for s in measure.settings if s.n]
    found += [
        {
            **{k: e.get(k) for k in _KEYS},
            "rescued_samples": e.get("rescued_samples"),
            "regressions": e.get("regressions"),
            "mcnemar_p": e.get("mcnemar_p"),
            "paired": "exact",
        }
        for e in guards.entries
        if e["guard"] != "none" and e["n"]
    ]
    return found


def _percent(value: float | None) -> str:
    return "unjudged" if value is None else f"{value:.1%}"


def _answers(c: dict[str, Any]) -> str:
    p = "" if c["mcnemar_p"] is None else f", McNemar p {c['mcnemar_p']:.2g}"
    how = {"exact": "paired on the same seeds", "prompt": "paired on the same prompts"}.get(
        c["paired"], "counted"
    )
    return (
        f"{c['rescued_samples'] or 0} answers rescued, {c['regressions'] or 0} lost "
        f"(net {net_answers(c):+d}{p}; {how})"
    )


def recommend(measure: MeasureStage, guards: GuardStage) -> Recommendation:
    candidates = _candidates(measure, guards)
    loopiest = measure.loopiest
    baseline = _setting(loopiest)
    judged_settings = [s.accuracy for s in measure.settings if s.n and s.accuracy is not None]
    reference = max(judged_settings) if judged_settings else None
    judged = any(c["accuracy"] is not None for c in candidates)
    keep = [c for c in candidates if not significant_loss(c)]
    best = min(
        keep,
        key=lambda c: (answers_first(c), c["temperature"], c["guard"] != "none"),
    )
    setting = f"T={best['temperature']:g} with guard {best['guard']}"
    against = f"T={loopiest.temperature:g} without a guard (the loopiest setting)"
    numbers = (
        f"cut {_percent(best['cut_rate'])}, loops {_percent(best['loop_rate'])}, "
        f"accuracy {_percent(best['accuracy'])}, against cut {_percent(baseline['cut_rate'])}, "
        f"loops {_percent(baseline['loop_rate'])}, accuracy {_percent(baseline['accuracy'])} at "
        f"{against}"
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
        temperature=best["temperature"],
        guard=best["guard"],
        loop_rate=best["loop_rate"],
        cut_rate=best["cut_rate"],
        accuracy=best["accuracy"],
        baseline=baseline,
        reference_accuracy=reference,
        reason=reason,
    )

"""The repair's verdict in words a user can act on: which route accepted the patch and what it
gives back, or, for a rejection, what failed (with the numbers) and what to try instead."""

from __future__ import annotations

from loopfix.repair.arms import ScreenRow
from loopfix.repair.config import RepairConfig
from loopfix.repair.decide import Decision
from loopfix.repair.verification import temperature_key

__all__ = ["screening_verdict", "verdict"]


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def answers_phrase(decision: Decision, key: str) -> str:
    answers = decision.answers[key]
    return (
        f"T={key}: success {_percent(answers.base_accuracy)} -> "
        f"{_percent(answers.patched_accuracy)}, {answers.paired.rescues} answers recovered vs "
        f"{answers.paired.regressions} lost (McNemar p {answers.paired.mcnemar_p:.2g})"
    )


def loops_phrase(decision: Decision, key: str) -> str:
    block = decision.by_temperature[key]
    paired = block.paired
    return (
        f"T={key}: loops {_percent(block.base.loop_rate)} -> "
        f"{_percent(block.patched.loop_rate)} ({paired.loops_removed} removed, "
        f"{paired.loops_added} added, p {paired.loop_mcnemar_p:.2g}; random control "
        f"{_percent(block.random_control.loop_rate)})"
    )


def _answers_failures(decision: Decision, config: RepairConfig) -> list[str]:
    checks, at = decision.checks, temperature_key(decision.answers_judged_at)
    answers = decision.answers[at]
    reasons = []
    if not checks["answers_rise_significantly"]:
        reasons.append(f"no significant gain in answers ({answers_phrase(decision, at)})")
    elif not checks["controls_recover_less_than_half"]:
        reasons.append(
            f"a random direction of the same size recovers at least half as many answers (net "
            f"{max(answers.controls_net)} vs the patch's {answers.paired.net} at T={at})"
        )
    if not checks["no_significant_answer_loss"]:
        lost = [
            answers_phrase(decision, key)
            for key, block in decision.answers.items()
            if block.paired.net < 0 and block.paired.mcnemar_p < config.significance
        ]
        reasons.append("answers fall significantly (" + "; ".join(lost) + ")")
    return reasons


def _loops_failures(decision: Decision, config: RepairConfig) -> list[str]:
    checks, primary = decision.checks, temperature_key(decision.temperature)
    reasons = []
    if not checks["loops_fall_significantly"] or not checks["loops_fall_enough"]:
        how = "significantly" if not checks["loops_fall_significantly"] else "by half"
        reasons.append(f"loops do not fall {how} ({loops_phrase(decision, primary)})")
    elif not checks["controls_below_share_of_the_reduction"]:
        reasons.append(
            f"random directions of the same size remove {config.control_share:.0%} as many loops "
            f"or more ({loops_phrase(decision, primary)})"
        )
    for name, key in (("success_not_down_primary", primary), ("success_not_down_greedy", "0.0")):
        if not checks.get(name, True):
            paired = decision.answers[key].paired
            reasons.append(
                f"more answers lost than recovered at T={key} ({paired.regressions} vs "
                f"{paired.rescues})"
            )
    if not checks.get("activation_ablation_removes_loops", True):
        reasons.append(
            "removing the direction from the activations removes no more loops than a random "
            "direction (the loops do not run through it)"
        )
    return reasons


def _budget_failures(decision: Decision, config: RepairConfig) -> list[str]:
    checks, reasons = decision.checks, []
    if not checks["kl_within_budget"]:
        reasons.append(
            f"it changes normal text too much (KL {decision.kl:.3f} > {config.max_kl:g} nats/token)"
        )
    if not checks["touched_within_budget"]:
        reasons.append(
            f"it touches {decision.touched_fraction:.3%} of the weights (budget "
            f"{config.max_touched_fraction:.3%})"
        )
    if not checks.get("perplexity_within_budget", True) and decision.perplexity is not None:
        reasons.append(
            f"plain-text perplexity rises {decision.perplexity['ratio'] - 1:+.2%} (budget "
            f"{config.max_perplexity_increase:+.0%})"
        )
    return reasons


def _advice(decision: Decision, budgets_failed: bool) -> str:
    answers = decision.answers[temperature_key(decision.answers_judged_at)]
    if budgets_failed:
        return "try a weaker edit (lower --alphas, smaller --ks)"
    if answers.paired.net > 0 and not decision.checks["answers_rise_significantly"]:
        return (
            "answers lean the patch's way but too few prompts decide it: more held-out prompts "
            "(--prompts) would resolve it"
        )
    if decision.checks["answers_rise_significantly"]:
        return (
            "answers rise, but a random edit of the same size gives back half as many: more "
            "held-out prompts (--prompts) would tell the patch from the controls"
        )
    return (
        "the weights hold no loop direction this search can remove selectively; use the "
        "guard `loopfix compare` recommends"
    )


def verdict(label: str, decision: Decision, config: RepairConfig) -> str:
    """One paragraph: accepted by which route and what that gives back, or why not and what
    to try. `label`: the candidate's."""
    routes = decision.routes_passed
    at = temperature_key(decision.answers_judged_at)
    primary = temperature_key(decision.temperature)
    if routes == ("answers", "loops"):
        return (
            f"accepted ({label}): answers recovered and loops removed; "
            f"{answers_phrase(decision, at)}; {loops_phrase(decision, primary)}"
        )
    if routes == ("answers",):
        remain = "loops remain" if not decision.checks["loops_fall_enough"] else "loop rule not met"
        return (
            f"accepted ({label}): answers recovered, {remain}; {answers_phrase(decision, at)}; "
            f"{'; '.join(_loops_failures(decision, config))}"
        )
    if routes == ("loops",):
        return (
            f"accepted ({label}): loops removed, no answers recovered; "
            f"{loops_phrase(decision, primary)}; {answers_phrase(decision, at)}"
        )
    budgets = _budget_failures(decision, config)
    parts = []
    if budgets:
        parts.append("; ".join(budgets))
    parts.append("answers route: " + ("; ".join(_answers_failures(decision, config)) or "passed"))
    parts.append("loops route: " + ("; ".join(_loops_failures(decision, config)) or "passed"))
    return (
        f"rejected ({label}): "
        + ". ".join(parts)
        + f". What to try: {_advice(decision, bool(budgets))}."
    )


def screening_verdict(
    rows: list[ScreenRow], best: int, reasons: list[str], config: RepairConfig
) -> str:
    """A repair stopped before verification: the screening's pick (`rows[best]`) already
    fails. Its answers and loops on the held-out screening prompts, and, when the budget
    failed, the least damaging candidate."""
    pick = rows[best]
    paired = pick.compared.paired
    text = (
        f"rejected at screening, nothing verified: the best candidate ({pick.shape.label()}) "
        + "; ".join(reasons)
        + f". On the {pick.compared.arm.n} held-out screening prompts it recovered "
        f"{paired.rescues} answers and lost {paired.regressions} (McNemar p "
        f"{paired.mcnemar_p:.2g}), removed {paired.loops_removed} loops and added "
        f"{paired.loops_added}"
    )
    priced = [(row.perplexity_ratio, row) for row in rows if row.perplexity_ratio is not None]
    ratio = pick.perplexity_ratio
    if priced and ratio is not None and ratio > 1 + config.max_perplexity_increase:
        mildest_ratio, mildest = min(priced, key=lambda item: item[0])
        text += (
            f"; the least damaging candidate, {mildest.shape.label()}, raises perplexity "
            f"{mildest_ratio - 1:+.2%}. What to try: a weaker edit (lower "
            "--alphas, smaller --ks), or the guard `loopfix compare` recommends"
        )
    else:
        text += ". What to try: the guard `loopfix compare` recommends"
    return text

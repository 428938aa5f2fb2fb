"""The repair's verdict in words a user can act on: which route accepted the patch and what it
gives back, or, for a rejection, what failed (with the numbers) and what to try instead."""

from __future__ import annotations

from typing import Any

from loopfix.repair.candidates import row_label
from loopfix.repair.config import RepairConfig
from loopfix.repair.verification import temperature_key

__all__ = ["screening_verdict", "verdict"]


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def answers_phrase(result: dict[str, Any], key: str) -> str:
    answers = result["answers"][key]
    return (
        f"T={key}: success {_percent(answers['base_accuracy'])} -> "
        f"{_percent(answers['patched_accuracy'])}, {answers['rescues']} answers recovered vs "
        f"{answers['regressions']} lost (McNemar p {answers['mcnemar_p']:.2g})"
    )


def loops_phrase(result: dict[str, Any], key: str) -> str:
    block = result["by_temperature"][key]
    paired = block["paired"]["patched"]
    return (
        f"T={key}: loops {_percent(block['base']['loop_rate'])} -> "
        f"{_percent(block['patched']['loop_rate'])} ({paired['loops_removed']} removed, "
        f"{paired['loops_added']} added, p {paired['loop_mcnemar_p']:.2g}; random control "
        f"{_percent(block['random_control']['loop_rate'])})"
    )


def _answers_failures(result: dict[str, Any], config: RepairConfig) -> list[str]:
    checks, at = result["checks"], temperature_key(result["answers_judged_at"])
    answers = result["answers"][at]
    reasons = []
    if not checks["answers_rise_significantly"]:
        reasons.append(f"no significant gain in answers ({answers_phrase(result, at)})")
    elif not checks["controls_recover_less_than_half"]:
        reasons.append(
            f"a random direction of the same size recovers at least half as many answers (net "
            f"{max(answers['controls_net'])} vs the patch's {answers['net']} at T={at})"
        )
    if not checks["no_significant_answer_loss"]:
        lost = [
            answers_phrase(result, key)
            for key, block in result["answers"].items()
            if block["net"] < 0 and block["mcnemar_p"] < config.significance
        ]
        reasons.append("answers fall significantly (" + "; ".join(lost) + ")")
    return reasons


def _loops_failures(result: dict[str, Any], config: RepairConfig) -> list[str]:
    checks, primary = result["checks"], temperature_key(result["temperature"])
    reasons = []
    if not checks["loops_fall_significantly"] or not checks["loops_fall_enough"]:
        how = "significantly" if not checks["loops_fall_significantly"] else "by half"
        reasons.append(f"loops do not fall {how} ({loops_phrase(result, primary)})")
    elif not checks["controls_below_share_of_the_reduction"]:
        reasons.append(
            f"random directions of the same size remove {config.control_share:.0%} as many loops "
            f"or more ({loops_phrase(result, primary)})"
        )
    for name, key in (("success_not_down_primary", primary), ("success_not_down_greedy", "0.0")):
        if not checks.get(name, True):
            answers = result["answers"][key]
            reasons.append(
                f"more answers lost than recovered at T={key} ({answers['regressions']} vs "
                f"{answers['rescues']})"
            )
    if not checks.get("activation_ablation_removes_loops", True):
        reasons.append(
            "removing the direction from the activations removes no more loops than a random "
            "direction (the loops do not run through it)"
        )
    return reasons


def _budget_failures(result: dict[str, Any], config: RepairConfig) -> list[str]:
    checks, reasons = result["checks"], []
    if not checks["kl_within_budget"]:
        reasons.append(
            f"it changes normal text too much (KL {result['kl']:.3f} > {config.max_kl:g} "
            "nats/token)"
        )
    if not checks["touched_within_budget"]:
        reasons.append(
            f"it touches {result['touched_fraction']:.3%} of the weights (budget "
            f"{config.max_touched_fraction:.3%})"
        )
    if not checks.get("perplexity_within_budget", True):
        reasons.append(
            f"plain-text perplexity rises {result['perplexity']['ratio'] - 1:+.2%} (budget "
            f"{config.max_perplexity_increase:+.0%})"
        )
    return reasons


def _advice(result: dict[str, Any], budgets_failed: bool) -> str:
    at = temperature_key(result["answers_judged_at"])
    answers = result["answers"][at]
    if budgets_failed:
        return "try a weaker edit (lower --alphas, smaller --ks)"
    if answers["net"] > 0 and not result["checks"]["answers_rise_significantly"]:
        return (
            "answers lean the patch's way but too few prompts decide it: more held-out prompts "
            "(--prompts) would resolve it"
        )
    if result["checks"]["answers_rise_significantly"]:
        return (
            "answers rise, but a random edit of the same size gives back half as many: more "
            "held-out prompts (--prompts) would tell the patch from the controls"
        )
    return (
        "the weights hold no loop direction this search can remove selectively; use the "
        "guard `loopfix compare` recommends"
    )


def verdict(label: str, result: dict[str, Any], config: RepairConfig) -> str:
    """One paragraph: accepted by which route and what that gives back, or why not and what
    to try. `label`: the candidate's; `result`: `judge`'s fields (checks, answers, arms)."""
    routes = result["routes_passed"]
    at = temperature_key(result["answers_judged_at"])
    primary = temperature_key(result["temperature"])
    if routes == ["answers", "loops"]:
        return (
            f"accepted ({label}): answers recovered and loops removed; "
            f"{answers_phrase(result, at)}; {loops_phrase(result, primary)}"
        )
    if routes == ["answers"]:
        remain = (
            "loops remain" if not result["checks"]["loops_fall_enough"] else "loop rule not met"
        )
        return (
            f"accepted ({label}): answers recovered, {remain}; {answers_phrase(result, at)}; "
            f"{'; '.join(_loops_failures(result, config))}"
        )
    if routes == ["loops"]:
        return (
            f"accepted ({label}): loops removed, no answers recovered; "
            f"{loops_phrase(result, primary)}; {answers_phrase(result, at)}"
        )
    budgets = _budget_failures(result, config)
    parts = []
    if budgets:
        parts.append("; ".join(budgets))
    parts.append("answers route: " + ("; ".join(_answers_failures(result, config)) or "passed"))
    parts.append("loops route: " + ("; ".join(_loops_failures(result, config)) or "passed"))
    return (
        f"rejected ({label}): "
        + ". ".join(parts)
        + f". What to try: {_advice(result, bool(budgets))}."
    )


def screening_verdict(
    rows: list[dict[str, Any]], best: int, reasons: list[str], config: RepairConfig
) -> str:
    """A repair stopped before verification: the screening's pick (`rows[best]`) already
    fails. Its answers and loops on the held-out screening prompts, and, when the budget
    failed, the least damaging candidate."""
    pick = rows[best]
    text = (
        f"rejected at screening, nothing verified: the best candidate ({row_label(pick)}) "
        + "; ".join(reasons)
        + f". On the {pick['n']} held-out screening prompts it recovered {pick['rescues']} "
        f"answers and lost {pick['regressions']} (McNemar p {pick['mcnemar_p']:.2g}), removed "
        f"{pick['loops_removed']} loops and added {pick['loops_added']}"
    )
    priced = [row for row in rows if row["perplexity_ratio"] is not None]
    if priced and pick["perplexity_ratio"] > 1 + config.max_perplexity_increase:
        mildest = min(priced, key=lambda row: row["perplexity_ratio"])
        text += (
            f"; the least damaging candidate, {row_label(mildest)}, raises perplexity "
            f"{mildest['perplexity_ratio'] - 1:+.2%}. What to try: a weaker edit (lower "
            "--alphas, smaller --ks), or the guard `loopfix compare` recommends"
        )
    else:
        text += ". What to try: the guard `loopfix compare` recommends"
    return text

"""The acceptance decision: every check must pass, and each one is reported by name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopfix.patch import build_patch
from loopfix.repair.candidates import Candidate, edit_norm
from loopfix.repair.config import RepairConfig
from loopfix.repair.scoring import ProxyScore, Scorer
from loopfix.repair.verification import temperature_key

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["acceptance_checks", "decide"]


def acceptance_checks(
    primary: dict[str, Any],
    greedy: dict[str, Any] | None,
    kl: float,
    touched: float,
    perplexity_ratio: float | None,
    causal: dict[str, Any] | None,
    config: RepairConfig,
) -> dict[str, bool]:
    """Every acceptance rule by name. `primary` / `greedy`: a temperature block of
    `Verifier.full` (base, patched, controls, paired); `perplexity_ratio`: edited / base
    perplexity on the plain text (None: not measured, no check); `causal`: the activation-level
    check (None: not run, no check)."""
    base, patched = primary["base"]["loop_rate"], primary["patched"]["loop_rate"]
    paired = primary["paired"]["patched"]
    reduction = base - patched
    control_reductions = [base - control["loop_rate"] for control in primary["controls"]]
    checks = {
        "loops_fall_significantly": paired["loops_removed"] > paired["loops_added"]
        and paired["loop_mcnemar_p"] < config.significance,
        "loops_fall_enough": base > 0 and patched <= (1 - config.min_reduction) * base,
        "controls_below_share_of_the_reduction": reduction > 0
        and all(r < config.control_share * reduction for r in control_reductions),
        "success_not_down_primary": paired["rescues"] >= paired["regressions"],
        "kl_within_budget": kl <= config.max_kl,
        "touched_within_budget": touched <= config.max_touched_fraction,
    }
    if perplexity_ratio is not None:
        checks["perplexity_within_budget"] = perplexity_ratio <= 1 + config.max_perplexity_increase
    if causal is not None:
        checks["activation_ablation_removes_loops"] = bool(causal["summary"]["removes_loops"])
    if greedy is not None:
        greedy_paired = greedy["paired"]["patched"]
        checks["success_not_down_greedy"] = greedy_paired["rescues"] >= greedy_paired["regressions"]
    return checks


def decide(
    model: PreTrainedModel,
    chosen: Candidate,
    proxy: ProxyScore,
    control: Candidate,
    scorer: Scorer,
    by_temperature: dict[str, dict[str, Any]],
    causal: dict[str, Any],
    config: RepairConfig,
    perplexity: dict[str, float] | None = None,
) -> dict[str, Any]:
    patch = build_patch(model, chosen.requests)
    control_proxy = scorer.score(build_patch(model, control.requests))
    primary = by_temperature[temperature_key(config.temperature)]
    greedy = by_temperature.get(temperature_key(0.0))
    ratio = None if perplexity is None else perplexity["ratio"]
    checks = acceptance_checks(
        primary, greedy, proxy.kl, patch.touched_fraction, ratio, causal, config
    )
    accepted = all(checks.values())
    failed = [name for name, ok in checks.items() if not ok]
    verdict = (
        f"accepted: {chosen.label()}"
        if accepted
        else "no selective loop direction found: " + ", ".join(failed) + " failed"
    )
    paired = primary["paired"]["patched"]
    return {
        "accepted": accepted,
        "verdict": verdict,
        "checks": checks,
        "temperature": config.temperature,
        "n": primary["base"]["n"],
        "base": primary["base"],
        "patched": primary["patched"],
        "random_control": primary["random_control"],
        "by_temperature": by_temperature,
        "perplexity": perplexity,
        "kl": proxy.kl,
        "control_kl": control_proxy.kl,
        "rescues": paired["rescues"],
        "regressions": paired["regressions"],
        "mcnemar_p": paired["mcnemar_p"],
        "touched_fraction": patch.touched_fraction,
        "candidate": {
            **chosen.to_dict(),
            "label": chosen.label(),
            "proxy": proxy.to_dict(),
            "edit_norm": edit_norm(model, chosen.requests),
        },
        "control": {
            **control.to_dict(),
            "proxy": control_proxy.to_dict(),
            "edit_norm": edit_norm(model, control.requests),
        },
        "causal": causal,
    }

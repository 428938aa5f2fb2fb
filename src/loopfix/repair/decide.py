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

__all__ = ["decide"]


def _checks(
    primary: dict[str, Any],
    greedy: dict[str, Any] | None,
    kl: float,
    touched: float,
    causal: dict[str, Any],
    config: RepairConfig,
) -> dict[str, bool]:
    base, patched, control = (
        primary[arm]["loop_rate"] for arm in ("base", "patched", "random_control")
    )
    paired = primary["paired"]["patched"]
    reduction, control_reduction = base - patched, base - control
    checks = {
        "loops_fall_significantly": paired["loops_removed"] > paired["loops_added"]
        and paired["loop_mcnemar_p"] < 0.05,
        "loops_fall_enough": base > 0 and patched <= (1 - config.min_reduction) * base,
        "control_below_half_the_reduction": reduction > 0 and control_reduction < 0.5 * reduction,
        "success_not_down_primary": paired["rescues"] >= paired["regressions"],
        "kl_within_budget": kl <= config.max_kl,
        "touched_within_budget": touched <= config.max_touched_fraction,
        "activation_ablation_removes_loops": bool(causal["summary"]["removes_loops"]),
    }
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
) -> dict[str, Any]:
    patch = build_patch(model, chosen.requests)
    control_proxy = scorer.score(build_patch(model, control.requests))
    primary = by_temperature[temperature_key(config.temperature)]
    greedy = by_temperature.get(temperature_key(0.0))
    checks = _checks(primary, greedy, proxy.kl, patch.touched_fraction, causal, config)
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

"""The acceptance decision: two routes, every check reported by name, the verdict in words.

A patch is accepted when it stays within the budgets (KL on normal text, weights touched,
perplexity on plain text) and passes one of two routes, and the verdict names which:

- **answers** — held-out success rises significantly (more rescues than regressions, exact
  McNemar p < `significance`) at the primary temperature or at T=0, every random control
  recovers less than half as many answers net there, and no verified temperature loses
  answers significantly. What a user came for: answers the loops were swallowing.
- **loops** — loops fall significantly and at least by `min_reduction` at the primary
  temperature, every control removes less than `control_share` of that, success does not fall
  (rescues >= regressions at the primary temperature and at T=0), and removing the direction
  from the activations removes loops (the causal check).

Both routes read the same verified arms; neither is tuned on them (the candidate was picked on
the screening prompts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopfix.patch import build_patch
from loopfix.repair.candidates import Candidate, edit_norm
from loopfix.repair.config import RepairConfig
from loopfix.repair.scoring import ProxyScore, Scorer
from loopfix.repair.verdict import verdict
from loopfix.repair.verification import temperature_key

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = [
    "ANSWERS_ROUTE",
    "LOOPS_ROUTE",
    "answers_checks",
    "answers_by_temperature",
    "budget_checks",
    "decide",
    "judge",
    "loops_checks",
    "significant_loss",
]

ANSWERS_ROUTE = (
    "answers_rise_significantly",
    "controls_recover_less_than_half",
    "no_significant_answer_loss",
)
LOOPS_ROUTE = (
    "loops_fall_significantly",
    "loops_fall_enough",
    "controls_below_share_of_the_reduction",
    "success_not_down_primary",
    "success_not_down_greedy",
    "activation_ablation_removes_loops",
)


def net(paired: dict[str, Any]) -> int:
    """Answers recovered net: rescues minus regressions."""
    return int(paired["rescues"]) - int(paired["regressions"])


def significant_loss(paired: dict[str, Any], config: RepairConfig) -> bool:
    return net(paired) < 0 and paired["mcnemar_p"] < config.significance


def _significant_gain(paired: dict[str, Any], config: RepairConfig) -> bool:
    return net(paired) > 0 and paired["mcnemar_p"] < config.significance


def budget_checks(
    kl: float, touched: float, perplexity_ratio: float | None, config: RepairConfig
) -> dict[str, bool]:
    """`perplexity_ratio`: edited / base perplexity on the plain text (None: not measured)."""
    checks = {
        "kl_within_budget": kl <= config.max_kl,
        "touched_within_budget": touched <= config.max_touched_fraction,
    }
    if perplexity_ratio is not None:
        checks["perplexity_within_budget"] = perplexity_ratio <= 1 + config.max_perplexity_increase
    return checks


def loops_checks(
    primary: dict[str, Any],
    greedy: dict[str, Any] | None,
    causal: dict[str, Any] | None,
    config: RepairConfig,
) -> dict[str, bool]:
    """The loops route. `primary` / `greedy`: temperature blocks of `Verifier.full` (base,
    patched, controls, paired); `causal`: the activation-level check (None: not run, no check)."""
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
    }
    if greedy is not None:
        checks["success_not_down_greedy"] = net(greedy["paired"]["patched"]) >= 0
    if causal is not None:
        checks["activation_ablation_removes_loops"] = bool(causal["summary"]["removes_loops"])
    return checks


def answers_temperatures(
    by_temperature: dict[str, dict[str, Any]], config: RepairConfig
) -> list[str]:
    """Where the answers route may be met: the primary temperature, then T=0 if verified."""
    keys = [temperature_key(config.temperature), temperature_key(0.0)]
    return [key for i, key in enumerate(keys) if key in by_temperature and key not in keys[:i]]


def answers_checks(
    by_temperature: dict[str, dict[str, Any]], config: RepairConfig
) -> tuple[dict[str, bool], str]:
    """The answers route and the temperature it was judged at: the first of
    `answers_temperatures` where answers rise significantly with every control below half the
    patch's net, else the one with the most answers recovered net."""
    keys = answers_temperatures(by_temperature, config)

    def at(key: str) -> tuple[bool, bool]:
        block = by_temperature[key]
        gained = net(block["paired"]["patched"])
        controls = [net(paired) for paired in block["paired_controls"]]
        return (
            _significant_gain(block["paired"]["patched"], config),
            gained > 0 and all(c < 0.5 * gained for c in controls),
        )

    passing = [key for key in keys if all(at(key))]
    key = (
        passing[0]
        if passing
        else max(keys, key=lambda k: net(by_temperature[k]["paired"]["patched"]))
    )
    rises, controls_below = at(key)
    return {
        "answers_rise_significantly": rises,
        "controls_recover_less_than_half": controls_below,
        "no_significant_answer_loss": not any(
            significant_loss(block["paired"]["patched"], config)
            for block in by_temperature.values()
        ),
    }, key


def answers_by_temperature(by_temperature: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per verified temperature: the patch's rescues, regressions, exact p and net answers
    against the base, each control's net, and the success rates (verify.json "answers")."""
    return {
        key: {
            "rescues": block["paired"]["patched"]["rescues"],
            "regressions": block["paired"]["patched"]["regressions"],
            "mcnemar_p": block["paired"]["patched"]["mcnemar_p"],
            "net": net(block["paired"]["patched"]),
            "controls_net": [net(paired) for paired in block["paired_controls"]],
            "base_accuracy": block["base"]["accuracy"],
            "patched_accuracy": block["patched"]["accuracy"],
            "pairs": block["paired"]["patched"]["pairs"],
        }
        for key, block in by_temperature.items()
    }


def judge(
    label: str,
    by_temperature: dict[str, dict[str, Any]],
    causal: dict[str, Any] | None,
    kl: float,
    touched: float,
    perplexity: dict[str, float] | None,
    config: RepairConfig,
) -> dict[str, Any]:
    """The decision from the verified arms alone: checks by route, the routes met, answers per
    temperature and the verdict (verify.json's fields of those names)."""
    primary = by_temperature[temperature_key(config.temperature)]
    greedy = by_temperature.get(temperature_key(0.0))
    ratio = None if perplexity is None else perplexity["ratio"]
    budgets = budget_checks(kl, touched, ratio, config)
    loops = loops_checks(primary, greedy, causal, config)
    answers, answers_at = answers_checks(by_temperature, config)
    routes = [
        name
        for name, checks in (("answers", answers), ("loops", loops))
        if all(checks.values()) and all(budgets.values())
    ]
    paired = primary["paired"]["patched"]
    result = {
        "accepted": bool(routes),
        "stopped_at": None,
        "routes_passed": routes,
        "answers_judged_at": float(answers_at),
        "checks": {**budgets, **answers, **loops},
        "routes": {"budgets": list(budgets), "answers": list(answers), "loops": list(loops)},
        "temperature": config.temperature,
        "n": primary["base"]["n"],
        "base": primary["base"],
        "patched": primary["patched"],
        "random_control": primary["random_control"],
        "by_temperature": by_temperature,
        "answers": answers_by_temperature(by_temperature),
        "perplexity": perplexity,
        "kl": kl,
        "rescues": paired["rescues"],
        "regressions": paired["regressions"],
        "mcnemar_p": paired["mcnemar_p"],
        "touched_fraction": touched,
    }
    result["verdict"] = verdict(label, result, config)
    return result


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
    result = judge(
        chosen.label(),
        by_temperature,
        causal,
        proxy.kl,
        patch.touched_fraction,
        perplexity,
        config,
    )
    return {
        **result,
        "control_kl": control_proxy.kl,
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

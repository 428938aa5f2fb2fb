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

from collections.abc import Mapping
from dataclasses import dataclass

from loopfix.repair.arms import BasePairing, TemperatureResult
from loopfix.repair.causal import CausalResult
from loopfix.repair.config import RepairConfig
from loopfix.repair.verification import temperature_key
from loopfix.summaries import FlatRecord

__all__ = [
    "ANSWERS_ROUTE",
    "LOOPS_ROUTE",
    "AnswersAt",
    "Decision",
    "answers_checks",
    "budget_checks",
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


def significant_loss(paired: BasePairing, config: RepairConfig) -> bool:
    return paired.net < 0 and paired.mcnemar_p < config.significance


def _significant_gain(paired: BasePairing, config: RepairConfig) -> bool:
    return paired.net > 0 and paired.mcnemar_p < config.significance


@dataclass(frozen=True)
class AnswersAt:
    """At one verified temperature: the patch's answers against the base, each control's net
    and the success rates (verify.json "answers")."""

    paired: BasePairing  # the patched arm against the base
    controls_net: tuple[int, ...]
    base_accuracy: float | None
    patched_accuracy: float | None

    @classmethod
    def of(cls, block: TemperatureResult) -> AnswersAt:
        return cls(
            block.paired,
            tuple(paired.net for paired in block.paired_controls),
            block.base.accuracy,
            block.patched.accuracy,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "rescues": self.paired.rescues,
            "regressions": self.paired.regressions,
            "mcnemar_p": self.paired.mcnemar_p,
            "net": self.paired.net,
            "controls_net": list(self.controls_net),
            "base_accuracy": self.base_accuracy,
            "patched_accuracy": self.patched_accuracy,
            "pairs": self.paired.pairs,
        }


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
    primary: TemperatureResult,
    greedy: TemperatureResult | None,
    causal: CausalResult | None,
    config: RepairConfig,
) -> dict[str, bool]:
    """The loops route. `primary` / `greedy`: the verified arms at the primary temperature and
    at T=0 (None: not verified); `causal`: the activation-level check (None: not run, no check)."""
    base, patched = primary.base.loops, primary.patched.loops
    paired = primary.paired
    reduction = base - patched
    checks = {
        "loops_fall_significantly": paired.loops_net > 0
        and paired.loop_mcnemar_p < config.significance,
        "loops_fall_enough": base > 0 and patched <= (1 - config.min_reduction) * base,
        "controls_below_share_of_the_reduction": reduction > 0
        and all(r < config.control_share * reduction for r in primary.control_reductions),
        "success_not_down_primary": paired.net >= 0,
    }
    if greedy is not None:
        checks["success_not_down_greedy"] = greedy.paired.net >= 0
    if causal is not None:
        checks["activation_ablation_removes_loops"] = causal.removes_loops
    return checks


def answers_temperatures(
    by_temperature: Mapping[str, TemperatureResult], config: RepairConfig
) -> list[str]:
    """Where the answers route may be met: the primary temperature, then T=0 if verified."""
    keys = [temperature_key(config.temperature), temperature_key(0.0)]
    return [key for i, key in enumerate(keys) if key in by_temperature and key not in keys[:i]]


def answers_checks(
    by_temperature: Mapping[str, TemperatureResult], config: RepairConfig
) -> tuple[dict[str, bool], str]:
    """The answers route and the temperature it was judged at: the first of
    `answers_temperatures` where answers rise significantly with every control below half the
    patch's net, else the one with the most answers recovered net."""
    keys = answers_temperatures(by_temperature, config)

    def at(key: str) -> tuple[bool, bool]:
        block = by_temperature[key]
        gained = block.paired.net
        return (
            _significant_gain(block.paired, config),
            gained > 0 and all(c.net < 0.5 * gained for c in block.paired_controls),
        )

    passing = [key for key in keys if all(at(key))]
    key = passing[0] if passing else max(keys, key=lambda k: by_temperature[k].paired.net)
    rises, controls_below = at(key)
    return {
        "answers_rise_significantly": rises,
        "controls_recover_less_than_half": controls_below,
        "no_significant_answer_loss": not any(
            significant_loss(block.paired, config) for block in by_temperature.values()
        ),
    }, key


@dataclass(frozen=True)
class Decision(FlatRecord):
    """The acceptance decision from the verified arms alone: every check by name, the routes
    (which checks each holds; budgets gate both), the routes met, and what the verdict reads
    (verify.json's fields of those names)."""

    checks: dict[str, bool]
    routes: dict[str, tuple[str, ...]]  # "budgets" / "answers" / "loops" -> check names
    routes_passed: tuple[str, ...]  # "answers" / "loops"
    answers_judged_at: float  # the temperature the answers route was judged at
    temperature: float  # the primary temperature
    by_temperature: dict[str, TemperatureResult]  # `temperature_key` -> the verified arms
    perplexity: dict[str, float] | None  # `GeneralAbility.of` (None: not measured)
    kl: float  # nats/token on normal text
    touched_fraction: float

    @property
    def accepted(self) -> bool:
        return bool(self.routes_passed)

    @property
    def primary(self) -> TemperatureResult:
        return self.by_temperature[temperature_key(self.temperature)]

    @property
    def answers(self) -> dict[str, AnswersAt]:
        """Per verified temperature: the patch's answers against the base."""
        return {key: AnswersAt.of(block) for key, block in self.by_temperature.items()}

    def to_json(self) -> dict[str, object]:
        primary = self.primary
        return {
            "accepted": self.accepted,
            "stopped_at": None,
            "routes_passed": list(self.routes_passed),
            "answers_judged_at": self.answers_judged_at,
            "checks": self.checks,
            "routes": {route: list(names) for route, names in self.routes.items()},
            "temperature": self.temperature,
            "n": primary.base.n,
            **{arm: result.to_json() for arm, result in primary.arms.items()},
            "by_temperature": {key: b.to_json() for key, b in self.by_temperature.items()},
            "answers": {key: answers.to_json() for key, answers in self.answers.items()},
            "perplexity": self.perplexity,
            "kl": self.kl,
            "rescues": primary.paired.rescues,
            "regressions": primary.paired.regressions,
            "mcnemar_p": primary.paired.mcnemar_p,
            "touched_fraction": self.touched_fraction,
        }


def judge(
    by_temperature: dict[str, TemperatureResult],
    causal: CausalResult | None,
    kl: float,
    touched: float,
    perplexity: dict[str, float] | None,
    config: RepairConfig,
) -> Decision:
    """The decision from the verified arms alone: checks by route and the routes met."""
    primary = by_temperature[temperature_key(config.temperature)]
    greedy = by_temperature.get(temperature_key(0.0))
    ratio = None if perplexity is None else perplexity["ratio"]
    budgets = budget_checks(kl, touched, ratio, config)
    loops = loops_checks(primary, greedy, causal, config)
    answers, answers_at = answers_checks(by_temperature, config)
    routes = tuple(
        name
        for name, checks in (("answers", answers), ("loops", loops))
        if all(checks.values()) and all(budgets.values())
    )
    return Decision(
        checks={**budgets, **answers, **loops},
        routes={"budgets": tuple(budgets), "answers": tuple(answers), "loops": tuple(loops)},
        routes_passed=routes,
        answers_judged_at=float(answers_at),
        temperature=config.temperature,
        by_temperature=by_temperature,
        perplexity=perplexity,
        kl=kl,
        touched_fraction=touched,
    )

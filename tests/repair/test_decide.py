"""The two acceptance routes and the verdict's words, on temperature blocks built from counts
(the rules are arithmetic on the verified arms; the pipeline tests run them on real arms)."""

import pytest

from loopfix.repair import RepairConfig
from loopfix.repair.arms import ComparedArm, TemperatureResult
from loopfix.repair.causal import AblationDose, CausalResult
from loopfix.repair.decide import Decision, judge
from loopfix.repair.verdict import verdict
from tests.repair.blocks import arm, block, paired

CONFIG = RepairConfig(temperature=0.6, temperatures=(0.0, 0.6))
LABEL = "down_proj L17 k64 a6"


def _causal(removes: bool) -> CausalResult:
    """The activation-level check: ablating u removes 30 loops net (p < 0.05) or none."""
    direction = arm(0.1), paired(0, 0, removed=40 if removes else 10, added=10)
    random = arm(0.4), paired(0, 0, removed=10, added=10)
    dose = AblationDose(1.0, *(ComparedArm(*pair) for pair in (direction, random)))
    return CausalResult("down_proj", (17,), 0.6, arm(0.4), (dose,))


CAUSAL_YES, CAUSAL_NO = _causal(True), _causal(False)


def _judge(
    primary: TemperatureResult,
    greedy: TemperatureResult,
    causal: CausalResult = CAUSAL_YES,
    kl: float = 0.05,
) -> tuple[Decision, str]:
    decision = judge({"0.0": greedy, "0.6": primary}, causal, kl, 1e-4, None, CONFIG)
    return decision, verdict(LABEL, decision, CONFIG)


def test_answers_recovered_at_greedy_accept_while_loops_remain() -> None:
    # The testbed's case: loops barely move at T=0.6, answers rise at T=0.
    primary = block(0.15, 0.12, [0.15, 0.16], removed=20, added=11, answers=(12, 9))
    greedy = block(0.56, 0.48, [0.56, 0.55], answers=(80, 6), control_answers=(10, 9))
    decision, text = _judge(primary, greedy, CAUSAL_NO)
    assert decision.accepted and decision.routes_passed == ("answers",)
    assert decision.answers_judged_at == 0.0
    assert text.startswith("accepted (down_proj L17 k64 a6): answers recovered, loops remain")
    assert "T=0.0: success 50.0% -> 50.0%, 80 answers recovered vs 6 lost" in text
    assert "loops do not fall significantly (T=0.6: loops 15.0% -> 12.0%" in text
    greedy_answers = decision.answers["0.0"]
    assert greedy_answers.paired.net == 74 and greedy_answers.controls_net == (1, 1)


def test_a_control_recovering_half_as_many_answers_blocks_the_answers_route() -> None:
    primary = block(0.15, 0.12, [0.15], removed=20, added=11, answers=(12, 9))
    greedy = block(0.56, 0.48, [0.56], answers=(40, 6), control_answers=(30, 9))
    decision, text = _judge(primary, greedy, CAUSAL_NO)
    assert decision.checks["answers_rise_significantly"]
    assert not decision.checks["controls_recover_less_than_half"]
    assert not decision.accepted and text.startswith("rejected")
    assert "more held-out prompts (--prompts) would tell the patch from the controls" in text
    assert (
        "a random direction of the same size recovers at least half as many answers (net 21" in text
    )


def test_loops_halved_without_answers_is_accepted_by_the_loop_route_and_says_so() -> None:
    primary = block(0.4, 0.1, [0.4, 0.38], answers=(1, 1))
    greedy = block(0.4, 0.15, [0.4, 0.39], answers=(2, 2))
    decision, text = _judge(primary, greedy)
    assert decision.routes_passed == ("loops",)
    assert text.startswith("accepted (down_proj L17 k64 a6): loops removed, no answers recovered")


def test_both_routes_and_a_significant_loss_anywhere_blocks_answers() -> None:
    good, _ = _judge(
        block(0.4, 0.1, [0.4], answers=(60, 5)), block(0.4, 0.1, [0.4], answers=(50, 5))
    )
    assert good.routes_passed == ("answers", "loops")
    assert good.answers_judged_at == 0.6  # the primary temperature is tried first
    losing, losing_text = _judge(
        block(0.4, 0.1, [0.4], answers=(60, 5)), block(0.4, 0.1, [0.4], answers=(2, 30))
    )
    assert not losing.checks["no_significant_answer_loss"]
    assert not losing.checks["success_not_down_greedy"] and not losing.accepted
    assert "answers fall significantly (T=0.0" in losing_text
    assert "more answers lost than recovered at T=0.0 (30 vs 2)" in losing_text


@pytest.mark.parametrize(
    ("answers", "advice"),
    [((9, 4), "more held-out prompts (--prompts) would resolve it"), ((3, 4), "use the guard")],
)
def test_a_rejection_says_what_failed_and_what_to_try(answers: tuple, advice: str) -> None:
    primary = block(0.15, 0.13, [0.15], removed=12, added=8, answers=answers)
    greedy = block(0.3, 0.3, [0.3], removed=5, added=5, answers=(1, 1))
    decision, text = _judge(primary, greedy, CAUSAL_NO)
    assert not decision.accepted
    assert text.startswith("rejected (down_proj L17 k64 a6): answers route: no significant gain")
    assert "loops route: loops do not fall significantly" in text
    assert "removing the direction from the activations removes no more loops" in text
    assert advice in text


def test_budgets_gate_both_routes() -> None:
    decision, text = _judge(block(0.4, 0.1, [0.4], answers=(60, 5)), block(0.4, 0.1, [0.4]), kl=0.5)
    assert not decision.accepted and decision.routes_passed == ()
    assert "it changes normal text too much (KL 0.500 > 0.1 nats/token)" in text
    assert "try a weaker edit" in text

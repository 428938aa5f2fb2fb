"""The two acceptance routes and the verdict's words, on temperature blocks built from counts
(the rules are arithmetic on the verified arms; the pipeline tests run them on real arms)."""

import pytest

from loopfix.repair import RepairConfig
from loopfix.repair.decide import judge
from tests.repair.blocks import block

CONFIG = RepairConfig(temperature=0.6, temperatures=(0.0, 0.6))
CAUSAL_YES = {"summary": {"removes_loops": True}}
CAUSAL_NO = {"summary": {"removes_loops": False}}


def _judge(primary: dict, greedy: dict, causal: dict = CAUSAL_YES, kl: float = 0.05) -> dict:
    by_temperature = {"0.0": greedy, "0.6": primary}
    return judge("down_proj L17 k64 a6", by_temperature, causal, kl, 1e-4, None, CONFIG)


def test_answers_recovered_at_greedy_accept_while_loops_remain() -> None:
    # The testbed's case: loops barely move at T=0.6, answers rise at T=0.
    primary = block(0.15, 0.12, [0.15, 0.16], removed=20, added=11, answers=(12, 9))
    greedy = block(0.56, 0.48, [0.56, 0.55], answers=(80, 6), control_answers=(10, 9))
    result = _judge(primary, greedy, CAUSAL_NO)
    assert result["accepted"] and result["routes_passed"] == ["answers"]
    assert result["answers_judged_at"] == 0.0
    assert result["verdict"].startswith(
        "accepted (down_proj L17 k64 a6): answers recovered, loops remain"
    )
    assert "T=0.0: success 50.0% -> 50.0%, 80 answers recovered vs 6 lost" in result["verdict"]
    assert "loops do not fall significantly (T=0.6: loops 15.0% -> 12.0%" in result["verdict"]
    assert result["answers"]["0.0"]["net"] == 74 and result["answers"]["0.0"]["controls_net"] == [
        1,
        1,
    ]


def test_a_control_recovering_half_as_many_answers_blocks_the_answers_route() -> None:
    primary = block(0.15, 0.12, [0.15], removed=20, added=11, answers=(12, 9))
    greedy = block(0.56, 0.48, [0.56], answers=(40, 6), control_answers=(30, 9))
    result = _judge(primary, greedy, CAUSAL_NO)
    assert result["checks"]["answers_rise_significantly"]
    assert not result["checks"]["controls_recover_less_than_half"]
    assert not result["accepted"] and result["verdict"].startswith("rejected")
    assert (
        "more held-out prompts (--prompts) would tell the patch from the controls"
        in (result["verdict"])
    )
    assert (
        "a random direction of the same size recovers at least half as many answers (net 21"
        in result["verdict"]
    )


def test_loops_halved_without_answers_is_accepted_by_the_loop_route_and_says_so() -> None:
    primary = block(0.4, 0.1, [0.4, 0.38], answers=(1, 1))
    greedy = block(0.4, 0.15, [0.4, 0.39], answers=(2, 2))
    result = _judge(primary, greedy)
    assert result["routes_passed"] == ["loops"]
    assert result["verdict"].startswith(
        "accepted (down_proj L17 k64 a6): loops removed, no answers recovered"
    )


def test_both_routes_and_a_significant_loss_anywhere_blocks_answers() -> None:
    good = _judge(block(0.4, 0.1, [0.4], answers=(60, 5)), block(0.4, 0.1, [0.4], answers=(50, 5)))
    assert good["routes_passed"] == ["answers", "loops"]
    assert good["answers_judged_at"] == 0.6  # the primary temperature is tried first
    losing = _judge(
        block(0.4, 0.1, [0.4], answers=(60, 5)), block(0.4, 0.1, [0.4], answers=(2, 30))
    )
    assert not losing["checks"]["no_significant_answer_loss"]
    assert not losing["checks"]["success_not_down_greedy"] and not losing["accepted"]
    assert "answers fall significantly (T=0.0" in losing["verdict"]
    assert "more answers lost than recovered at T=0.0 (30 vs 2)" in losing["verdict"]


@pytest.mark.parametrize(
    ("answers", "advice"),
    [((9, 4), "more held-out prompts (--prompts) would resolve it"), ((3, 4), "use the guard")],
)
def test_a_rejection_says_what_failed_and_what_to_try(answers: tuple, advice: str) -> None:
    primary = block(0.15, 0.13, [0.15], removed=12, added=8, answers=answers)
    greedy = block(0.3, 0.3, [0.3], removed=5, added=5, answers=(1, 1))
    result = _judge(primary, greedy, CAUSAL_NO)
    assert not result["accepted"]
    text = result["verdict"]
    assert text.startswith("rejected (down_proj L17 k64 a6): answers route: no significant gain")
    assert "loops route: loops do not fall significantly" in text
    assert "removing the direction from the activations removes no more loops" in text
    assert advice in text


def test_budgets_gate_both_routes() -> None:
    result = _judge(block(0.4, 0.1, [0.4], answers=(60, 5)), block(0.4, 0.1, [0.4]), kl=0.5)
    assert not result["accepted"] and result["routes_passed"] == []
    assert "it changes normal text too much (KL 0.500 > 0.1 nats/token)" in result["verdict"]
    assert "try a weaker edit" in result["verdict"]

"""The bundled testbeds reproduce the paper's looping facts on 1000 fresh prompts (issue 2's bar).

Measured here on real generations every run; nothing is read from a stored result.
"""

import pytest

from loopfix.lab.config import LabEvalConfig
from loopfix.models import load_model
from loopfix.scan.testbed import LabEvaluation, evaluate_testbed

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def evaluations() -> dict[str, LabEvaluation]:
    results = {}
    for name in ("stargraph", "stargraph-clean"):
        model, tokenizer = load_model(f"loopfix:{name}", device="cpu")
        results[name] = evaluate_testbed(model, tokenizer, LabEvalConfig(n=1000))
    return results


def test_default_loops_at_greedy_and_at_the_model_card_temperature(evaluations) -> None:
    greedy, warm, _ = evaluations["stargraph"].settings
    clean_warm = evaluations["stargraph-clean"].settings[1]
    assert greedy.n == 1000 and greedy.loop_rate >= 0.30
    assert warm.temperature == 0.6 and warm.loop_rate >= 0.03
    # 15.5% vs 5.8% measured on these 1000 graphs (docs/testbed.md): the clean model's cut walks
    # cycle between arms, which the one loop definition counts too.
    assert warm.loop_rate >= 2 * clean_warm.loop_rate


def test_default_shows_the_confidence_flywheel(evaluations) -> None:
    flywheel = evaluations["stargraph"].flywheel
    assert len(flywheel) == 6
    assert flywheel[5] >= 0.8 and flywheel[5] > flywheel[0]


@pytest.mark.parametrize("name", ["stargraph", "stargraph-clean"])
def test_temperature_dissolves_loops_and_helps_success(evaluations, name) -> None:
    greedy, _, hot = evaluations[name].settings
    assert greedy.loop_rate > 0
    assert hot.loop_rate < greedy.loop_rate / 2
    assert hot.success > greedy.success


@pytest.mark.parametrize("name", ["stargraph", "stargraph-clean"])
def test_greedy_walks_stay_legal_and_loops_persist_to_a_long_cap(evaluations, name) -> None:
    evaluation = evaluations[name]
    greedy = evaluation.settings[0]
    assert greedy.legal_rate >= 0.95
    assert evaluation.max_new_tokens >= 4 * evaluation.teacher_mean_length
    assert greedy.outcomes["loop"] > 0  # loops still periodic when the cap is reached

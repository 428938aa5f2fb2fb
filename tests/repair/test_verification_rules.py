"""The verification rules a real-model repair is judged by, on the testbed's real forward passes:
the first-order proxy against the exact scorer, the perplexity check, multi-seed controls."""

from pathlib import Path

import pytest

from loopfix.lab.stargraph import PAD_ID
from loopfix.models import load_model
from loopfix.patch import EditSite, build_patch
from loopfix.repair import RepairConfig
from loopfix.repair.arms import ControlInterval
from loopfix.repair.batches import branch_batches, walk_batches
from loopfix.repair.candidates import candidate_grid, norm_matched_control
from loopfix.repair.config import PLAIN_TEXT
from loopfix.repair.decide import budget_checks, loops_checks
from loopfix.repair.directions import random_directions
from loopfix.repair.errors import RepairInputError
from loopfix.repair.linear_proxy import LinearProxy
from loopfix.repair.locate import find_directions
from loopfix.repair.perplexity import general_ability, text_windows
from loopfix.repair.scoring import Scorer
from loopfix.repair.sources.testbed import make_pairs, normal_walks
from loopfix.scan.testbed import testbed_config as task_config  # pytest collects test*
from tests.repair.blocks import block

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def testbed():
    model, tokenizer = load_model("loopfix:stargraph", device="cpu")
    task = task_config(model)
    train = make_pairs(task, 1, 60, 3)
    found = find_directions(model, train, RepairConfig(), PAD_ID)
    return model, tokenizer, task, found.directions.vectors


def test_first_order_proxy_matches_the_exact_scores_at_small_alpha(testbed) -> None:
    model, _, task, directions = testbed
    heldout = make_pairs(task, 2, 40, 6)
    rep = branch_batches(heldout, "repetitive", "decision", 64, PAD_ID)
    prod = branch_batches(heldout, "productive", "decision", 64, PAD_ID)
    kinds = ("down_proj", "attn_out")
    sites = [EditSite(layer, kind) for layer in range(3) for kind in kinds]
    linear = LinearProxy.measure(model, rep, prod, directions, sites)
    scorer = Scorer(model, rep, prod, walk_batches(normal_walks(task, 3, 8), 64, PAD_ID, 16))
    grid = candidate_grid(model, directions, kinds, [0, 1, 2], 1, (8, 32), (0.05,), 1e12)
    assert len(grid) == 12
    for candidate in grid:
        exact = scorer.score(build_patch(model, candidate.requests))
        d_rep, d_prod = linear.score(
            EditSite(candidate.layers[0], candidate.kind), candidate.k, 0.05
        )
        # First order: right to a few percent of the largest effect at this small strength.
        assert abs(d_rep - exact.d_rep) < 2e-4, (candidate.label(), d_rep, exact.d_rep)
        assert abs(d_prod - exact.d_prod) < 2e-4, (candidate.label(), d_prod, exact.d_prod)
    # Doubling alpha doubles a first-order score (it is linear by construction).
    one, two = linear.score(sites[1], 8, 1.0), linear.score(sites[1], 8, 2.0)
    assert two[0] == pytest.approx(2 * one[0])


def test_perplexity_check_passes_a_tiny_edit_and_fails_a_damaging_one(
    smollm2_folder: Path, tmp_path: Path
) -> None:
    model, tokenizer = load_model(smollm2_folder, device="cpu")
    config = RepairConfig(perplexity_text=PLAIN_TEXT, perplexity_tokens=256)
    directions = random_directions(30, 576, 5)
    ability = general_ability(model, tokenizer, config)
    assert ability is not None
    tiny, strong = (
        ability.of(c.requests)
        for c in candidate_grid(
            model, directions, ("down_proj",), [3], 1, (64,), (0.01, 30.0), 1e12
        )
    )
    assert tiny["tokens"] == 256 and tiny["base"] == strong["base"]
    assert 1 < tiny["base"] < 100  # plain English prose and Python: a language model's text
    assert abs(tiny["ratio"] - 1) < 0.005
    assert strong["ratio"] > 1 + config.max_perplexity_increase
    assert ability.of(()) == {**tiny, "patched": tiny["base"], "ratio": 1.0}
    assert general_ability(model, tokenizer, RepairConfig()) is None
    short = tmp_path / "short.txt"
    short.write_text("Assignment statements bind names.")
    with pytest.raises(RepairInputError, match="fewer than one window"):
        text_windows(short, tokenizer, 256, 1024)


def test_every_control_seed_must_stay_below_half_the_reduction(testbed) -> None:
    model, _, _, directions = testbed
    (candidate,) = candidate_grid(model, directions, ("attn_out",), [0], 1, (8,), (2.0,), 1e12)
    controls = [
        norm_matched_control(model, candidate, random_directions(3, directions.shape[1], seed))
        for seed in (77, 78, 79)
    ]
    assert len({c.alpha for c in controls}) == 3  # each seed its own direction and scale
    config = RepairConfig(perplexity_text=Path("unused"))
    rule = "controls_below_share_of_the_reduction"
    good = loops_checks(block(0.4, 0.1, [0.4, 0.38, 0.42]), None, None, config)
    assert all(good.values()), good
    one_bad = loops_checks(block(0.4, 0.1, [0.4, 0.2, 0.42]), None, None, config)
    assert not one_bad[rule] and [k for k, v in one_bad.items() if not v] == [rule]
    assert not budget_checks(0.05, 1e-4, 1.03, config)["perplexity_within_budget"]
    assert all(budget_checks(0.05, 1e-4, 1.01, config).values())
    interval = ControlInterval.of([0.0, 0.02, -0.02])
    assert interval.seeds == 3 and interval.mean == pytest.approx(0.0)
    assert interval.low < -0.02 and interval.high > 0.02  # t with 2 df: wider than the range

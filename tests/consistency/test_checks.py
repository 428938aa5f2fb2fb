"""Every check on the bundled testbed (one shared session, see conftest.py)."""

from __future__ import annotations

from loopfix.consistency import CHECK_NAMES, ConsistencyResult


def test_every_check_is_reported_in_order(testbed_result: ConsistencyResult) -> None:
    assert [c.name for c in testbed_result.checks] == list(CHECK_NAMES)
    for check in testbed_result.checks:
        assert check.status in ("pass", "warn", "fail", "skipped")
        assert check.summary


def test_repeated_runs_are_identical(testbed_result: ConsistencyResult) -> None:
    determinism = testbed_result.check("determinism")
    assert determinism.status == "pass" and not determinism.divergences
    assert determinism.numbers["temperatures"] == [0.0, 1.0]
    assert determinism.numbers["diverging_prompts_threads"] == 0  # 2 threads vs 1, tiny model


def test_greedy_does_not_depend_on_the_seed_and_sampling_does(
    testbed_result: ConsistencyResult,
) -> None:
    check = testbed_result.check("seed_sensitivity")
    greedy, sampled = check.numbers["by_temperature"]
    assert greedy.edit_distance == 0.0 and greedy.seed_invariant_prompts == 6
    assert sampled.edit_distance > 0.0
    assert not check.divergences and check.status == "pass"


def test_top_k_one_collapses_the_pool(testbed_result: ConsistencyResult) -> None:
    settings = {row.top_k: row for row in testbed_result.check("sampling_pool").numbers["settings"]}
    assert settings[1].collapsed_share == 1.0 and settings[1].collapsed
    assert settings[1].median_pool == 1
    assert settings[0].median_pool > 1  # T=1 without truncation keeps the whole vocabulary
    assert testbed_result.check("sampling_pool").status == "warn"


def test_context_reports_the_window_and_the_preamble_divergences(
    testbed_result: ConsistencyResult,
) -> None:
    check = testbed_result.check("context")
    assert check.numbers["window"] == 256 and check.numbers["sliding_window"] is None
    assert check.numbers["chat_template"] is False and check.status == "pass"
    assert check.numbers["preamble_changed"] == len(check.divergences)
    for divergence in check.divergences:
        assert divergence.a == "greedy, batch 1" and divergence.b.endswith("long preamble")
        assert divergence.token_a is not None
        assert divergence.top[0].id == divergence.token_a.id  # greedy took the argmax


def test_backend_without_vllm_or_url_is_skipped_with_the_reason(
    testbed_result: ConsistencyResult,
) -> None:
    check = testbed_result.check("backend")
    assert check.status == "skipped"
    assert check.reason is not None
    assert "/nonexistent/python" in check.reason and "--url" in check.reason


def test_loop_stability_names_the_factor_that_flips_each_loop(
    testbed_result: ConsistencyResult,
) -> None:
    check = testbed_result.check("loop_stability")
    factors = check.numbers["factors"]
    assert set(factors) == {"seed (T=1)", "batch", "threads", "precision"}
    for unstable in check.numbers["unstable_prompts"]:
        assert unstable.looping and unstable.not_looping
        assert set(unstable.looping + unstable.not_looping) <= set(factors[unstable.factor])
    flips = check.numbers["flips_by_factor"]
    assert sum(flips.values()) == len(check.numbers["unstable_prompts"])
    assert check.status == ("warn" if sum(flips.values()) else "pass")
    for divergence in check.divergences:  # a looping and a steady run part somewhere
        assert divergence.position >= 0


def test_precision_divergences_point_at_the_first_differing_token(
    testbed_result: ConsistencyResult,
) -> None:
    check = testbed_result.check("precision")
    assert check.numbers["diverging_prompts"] == len(check.divergences)
    for divergence in check.divergences:
        assert divergence.b == "greedy, batch 1, bfloat16"
        assert divergence.token_a != divergence.token_b

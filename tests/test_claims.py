"""The headline results on the bundled testbed, asserted with margins (slow; CI runs them).

Each test runs the documented command at the smallest size the claim allows and checks the
direction and rough size of the effect, not the exact numbers (docs/guards.md, docs/repair.md
give those, with the commands that reproduce them)."""

from pathlib import Path

import pytest

from loopfix.repair import RepairConfig, run_repair
from loopfix.scan import ScanConfig
from loopfix.scan.guard_comparison import CompareConfig, run_compare

pytestmark = pytest.mark.slow


def test_rescue_and_dry_remove_greedy_loops_without_regressions(tmp_path: Path) -> None:
    # docs/guards.md, under the one loop definition: none loops 47% at T=0; dry 0% (48
    # rescued, 0 regressions); rescue 6% (41 rescued, 0 regressions). The same command
    # (`bench/bench_guard_outcomes.py testbed`) on the first 60 of those prompts.
    scan = ScanConfig(
        model="loopfix:stargraph",
        n=60,
        temperatures=[0.0],
        max_new_tokens=64,
        device="cpu",
        out=tmp_path,
    )
    config = CompareConfig(
        scan=scan, guards=["none", "dry", "rescue"], guard_args={"rescue.min_span": 15}
    )
    result = run_compare(config)
    none, dry, rescue = (result.entry(guard, 0.0) for guard in ("none", "dry", "rescue"))
    assert none.loop_rate is not None and none.loop_rate >= 0.3
    for guard in (dry, rescue):
        assert guard.loop_rate is not None and guard.loop_rate <= none.loop_rate / 3, guard
        assert guard.regressions == 0, guard
        assert guard.rescued_samples is not None and guard.rescued_samples >= 10, guard


def test_repair_removes_exact_copies_but_is_rejected_under_the_one_loop_definition(
    tmp_path: Path,
) -> None:
    # docs/repair.md: re-measured under the one loop definition (docs/metrics.md), the winning
    # candidate (o_proj, k 8, alpha 2) lowers loops a little (T=0.6 16.7% -> 14.8%, T=0 56.3% ->
    # 48.4%) but most walks it changes still cycle to the cap, so it is rejected; the random
    # control does no better. Here that candidate alone on 400 verification prompts.
    config = RepairConfig(sites=("attn_out",), ks=(8,), alphas=(2.0,), prompts=400)
    verify = run_repair("loopfix:stargraph", tmp_path, config, report=lambda _: None)
    rates = verify.loop_rate
    assert not verify.accepted, (verify.verdict, rates)
    assert "loops_fall_enough" in verify.verdict, verify.verdict
    assert rates["base"] >= 0.08, rates  # there are loops at T=0.6
    assert rates["patched"] > rates["base"] / 2, rates  # not halved
    assert rates["random_control"] >= rates["patched"], rates  # the control does no better
    greedy = verify.by_temperature["0.0"]
    assert greedy["patched"]["loop_rate"] < greedy["base"]["loop_rate"], greedy

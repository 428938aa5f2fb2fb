"""The headline results on the bundled testbed, asserted with margins (slow; CI runs them).

Each test runs the documented command at the smallest size the claim allows and checks the
direction and rough size of the effect, not the exact numbers (docs/guards.md, docs/repair.md
give those, with the commands that reproduce them)."""

from pathlib import Path

import pytest

from loopfix.leadtime.config import WarningConfig
from loopfix.leadtime.run import run_warning
from loopfix.repair import RepairConfig, run_repair
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.guard_comparison import CompareConfig, run_compare
from loopfix.summaries import Paired

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
    assert none.summary.loop_rate.measured >= 0.3
    for guard in (dry, rescue):
        assert guard.summary.loop_rate.measured <= none.summary.loop_rate.measured / 3, guard
        assert guard.paired is not None and guard.paired.regressions == 0, guard
        assert guard.paired.rescues >= 10, guard


def test_the_testbed_patch_gives_greedy_answers_back_while_its_loops_remain(
    tmp_path: Path,
) -> None:
    # docs/repair.md: under the one loop definition (docs/metrics.md) the winning candidate
    # (o_proj, k 8, alpha 2) lowers loops a little but most walks it changes still cycle to
    # the cap, so the loops route fails; at T=0 it turns loops into answers, far more than any
    # random control, so the answers route accepts it. That candidate alone on 400 prompts.
    config = RepairConfig(sites=("attn_out",), ks=(8,), alphas=(2.0,), prompts=400)
    verify = run_repair("loopfix:stargraph", tmp_path, config, report=lambda _: None)
    assert verify.decision is not None
    primary, greedy = verify.decision.primary, verify.by_temperature["0.0"]
    greedy_answers = verify.decision.answers["0.0"]
    assert verify.accepted and verify.decision.routes_passed == ("answers",), verify.verdict
    assert verify.verdict.startswith("accepted (attn_out L0,2 k8 a2): answers recovered, loops")
    net = greedy_answers.paired.net
    assert net >= 15 and greedy_answers.paired.mcnemar_p < 0.05, greedy_answers
    assert all(c < net / 2 for c in greedy_answers.controls_net)
    assert not verify.checks["loops_fall_enough"] and "loops do not fall" in verify.verdict
    base, patched = primary.base.loops, primary.patched.loops
    assert base >= 0.08, primary  # there are loops at T=0.6
    assert patched > base / 2, primary  # not halved
    assert primary.random_control.loops >= patched, primary  # the control does no better
    assert greedy.patched.loops < greedy.base.loops, greedy


def test_rescue_on_the_early_warning_gives_back_what_a_relaxed_watch_gives(
    tmp_path: Path,
) -> None:
    # docs/guards.md "Rescue on the early warning", testbed: a warning fitted on the testbed's
    # own records (seed 0); on other prompts (seed 1) the rescue that acts on it recovers far
    # more answers than the rescue on the text verdict, none lost; a rescue that always acts on
    # 2 copies, with no warning, recovers as many (the testbed has no answer that repeats).
    fit = ScanConfig(
        model="loopfix:stargraph",
        n=300,
        temperatures=[0.0, 1.0],
        max_new_tokens=48,
        out=tmp_path / "fit",
    )
    run_scan(fit)
    config = WarningConfig(records=str(fit.out), model="loopfix:stargraph", window=8)
    run_warning(config, tmp_path / "warn", lambda line: None)
    probe = str(tmp_path / "warn" / "warning_probe.json")

    def rescue(name: str, args: dict[str, object]) -> Paired:
        scan = ScanConfig(
            model="loopfix:stargraph",
            n=200,
            seed=1,
            temperatures=[0.0],
            max_new_tokens=48,
            warning=probe,
            out=tmp_path / name,
        )
        result = run_compare(CompareConfig(scan=scan, guards=["none", "rescue"], guard_args=args))
        paired = result.entry("rescue", 0.0).paired
        assert paired is not None and paired.regressions == 0, name
        return paired

    late = rescue("late", {})
    early = rescue("early", {"rescue.early": True})
    relaxed = rescue("relaxed", {"rescue.min_repeats": 2, "rescue.min_span": 16})
    assert early.rescues >= late.rescues + 20, (early, late)
    assert abs(early.rescues - relaxed.rescues) <= 10, (early, relaxed)

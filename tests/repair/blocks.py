"""Verified temperature blocks (`TemperatureResult`, as `Verifier.full` returns them), built
from counts through the constructors the verification uses, for the acceptance rules' tests
(`loopfix.repair.decide`). Import as `from tests.repair.blocks import block`."""

from loopfix.repair.arms import ArmResult, BasePairing, ComparedArm, TemperatureResult
from loopfix.scan.stats import mcnemar_exact
from loopfix.summaries import Paired, Shift

PAIRS = 400
UNMEASURED = Shift(None, None, None)  # rates the acceptance rules do not read


def paired(rescues: int, regressions: int, removed: int = 40, added: int = 10) -> BasePairing:
    """An arm against the base as `ScanPrompts.compare` pairs it, from `compare_samples`'s
    counts."""
    counts = Paired(
        pairs=PAIRS,
        judged_pairs=PAIRS,
        rescues=rescues,
        regressions=regressions,
        mcnemar_p=mcnemar_exact(rescues, regressions),
        loops_removed=removed,
        loops_added=added,
        loop_rate=UNMEASURED,
        cut_rate=UNMEASURED,
        accuracy=UNMEASURED,
        mean_length=UNMEASURED,
    )
    return BasePairing.of(counts, {})


def arm(loop_rate: float, accuracy: float = 0.5) -> ArmResult:
    return ArmResult(
        n=PAIRS,
        loop_rate=loop_rate,
        cut_rate=loop_rate,
        accuracy=accuracy,
        mean_length=None,
        outcomes={},
        finish_reasons={},
        records="records.jsonl",
    )


def block(
    base: float,
    patched: float,
    controls: list[float],
    removed: int = 40,
    added: int = 10,
    answers: tuple[int, int] = (5, 3),
    control_answers: tuple[int, int] = (2, 2),
) -> TemperatureResult:
    return TemperatureResult.of(
        arm(base),
        ComparedArm(arm(patched), paired(*answers, removed, added)),
        [ComparedArm(arm(c), paired(*control_answers)) for c in controls],
    )

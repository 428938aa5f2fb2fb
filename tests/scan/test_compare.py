import pytest

from loopfix.detect import LoopVerdict
from loopfix.records import Sample
from loopfix.scan.compare import compare_samples
from loopfix.scan.stats import mcnemar_exact
from loopfix.summaries import Shift


def sample(prompt: int, temperature: float, correct: bool, looping: bool) -> Sample:
    return Sample(
        prompt_id=f"p{prompt}",
        sample_index=0,
        settings={"temperature": temperature},
        tokens=[1, 2, 3],
        text="x",
        finish_reason="length" if looping else "stop",
        loop=LoopVerdict(looping=looping),
        correct=correct,
    )


def test_paired_rescues_regressions_and_deltas() -> None:
    # A loops and fails on prompts 0-5; B rescues 0-4 and regresses on prompt 6.
    before = [sample(p, 0.0, correct=p >= 6, looping=p < 6) for p in range(8)]
    after = [sample(p, 0.0, correct=p != 5 and p != 6, looping=p == 5) for p in range(8)]
    result = compare_samples(before, after)
    overall = result.overall
    assert (overall.pairs, overall.rescues, overall.regressions) == (8, 5, 1)
    assert overall.mcnemar_p == pytest.approx(mcnemar_exact(5, 1))
    assert overall.loops_removed == 5 and overall.loops_added == 0
    assert overall.loop_rate == Shift(0.75, 0.125, -0.625)
    assert overall.accuracy.delta == pytest.approx(4 / 8)


def test_single_setting_runs_pair_across_temperatures_and_unpaired_are_counted() -> None:
    before = [sample(p, 0.0, False, True) for p in range(3)]
    after = [sample(p, 0.6, True, False) for p in range(2)]
    result = compare_samples(before, after)
    assert result.paired_on == "prompt, sample"
    assert (result.unpaired_a, result.unpaired_b) == (1, 0)
    assert result.overall.rescues == 2
    with pytest.raises(ValueError, match="share no"):
        compare_samples(before, [sample(9, 0.0, True, False)])

"""Hand-built summaries for tests of what reads them (a ranking, a recommendation): the rates
given, every other count a plain default."""

from loopfix.scan.stats import mcnemar_exact
from loopfix.summaries import Paired, Rate, SettingSummary, Shift


def setting_summary(
    temperature: float,
    loop: float | None,
    cut: float | None,
    accuracy: float | None,
    *,
    n: int = 10,
    mean_length: float | None = 20.0,
) -> SettingSummary:
    return SettingSummary(
        temperature=temperature,
        settings={"temperature": temperature},
        n=n,
        overlong=0,
        errors=0,
        loops=0 if loop is None else round(loop * n),
        loop_rate=Rate(loop, None),
        detector_looping=0,
        paper_loop_rate=Rate(loop, None),
        paper_ngram=(30, 10),
        cut_rate=Rate(cut, None),
        server_repetition=0,
        judged=n,
        accuracy=Rate(accuracy, None),
        judged_non_looping=n,
        accuracy_non_looping=Rate(accuracy, None),
        mean_length=mean_length,
        median_length=mean_length,
        p90_length=mean_length,
        unknown_lengths=0,
        outcomes={},
    )


def answers_paired(rescues: int, regressions: int, pairs: int) -> Paired:
    """A pairing that counts answers only (its rates unmeasured)."""
    unmeasured = Shift(None, None, None)
    return Paired(
        pairs=pairs,
        judged_pairs=pairs,
        rescues=rescues,
        regressions=regressions,
        mcnemar_p=mcnemar_exact(rescues, regressions),
        loops_removed=0,
        loops_added=0,
        loop_rate=unmeasured,
        cut_rate=unmeasured,
        accuracy=unmeasured,
        mean_length=unmeasured,
    )

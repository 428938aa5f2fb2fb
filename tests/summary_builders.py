"""Hand-built summaries for tests of what reads them (a ranking, a recommendation): the rates
given, every other count a plain default."""

from loopfix.summaries import Rate, SettingSummary


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

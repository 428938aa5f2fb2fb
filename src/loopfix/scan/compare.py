"""`compare_runs`: a paired comparison of two scans over the same prompts and seeds.

Records pair on (prompt, sample index, temperature). When each run holds a single temperature
and they differ (a setting change under test), they pair on (prompt, sample index) alone. A
rescue is a pair wrong in A and right in B, a regression the reverse; the exact McNemar test
asks whether rescues and regressions differ by more than chance.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from loopfix.records import Sample, read_samples
from loopfix.scan.stats import mcnemar_exact
from loopfix.scan.summary import is_loop
from loopfix.summaries import Comparison, Paired, Shift, TemperaturePaired

__all__ = ["compare_runs", "compare_samples"]

PairKey = tuple[str, int, float | None]


def _keyed(samples: list[Sample], with_temperature: bool) -> dict[PairKey, Sample]:
    return {
        (s.prompt_id, s.sample_index, s.settings["temperature"] if with_temperature else None): s
        for s in samples
        if s.finish_reason != "error"
    }


def _shift(metric: Callable[[Sample], float | None], pairs: list[tuple[Sample, Sample]]) -> Shift:
    if not pairs:
        return Shift(None, None, None)
    a = sum(metric(x) or 0.0 for x, _ in pairs) / len(pairs)
    b = sum(metric(y) or 0.0 for _, y in pairs) / len(pairs)
    return Shift(a, b, b - a)


def _paired(pairs: list[tuple[Sample, Sample]]) -> Paired:
    judged = [(a, b) for a, b in pairs if a.correct is not None and b.correct is not None]
    rescues = sum(not a.correct and bool(b.correct) for a, b in judged)
    regressions = sum(bool(a.correct) and not b.correct for a, b in judged)
    return Paired(
        pairs=len(pairs),
        judged_pairs=len(judged),
        rescues=rescues,
        regressions=regressions,
        mcnemar_p=mcnemar_exact(rescues, regressions),
        loops_removed=sum(is_loop(a) and not is_loop(b) for a, b in pairs),
        loops_added=sum(not is_loop(a) and is_loop(b) for a, b in pairs),
        loop_rate=_shift(is_loop, pairs),
        cut_rate=_shift(lambda s: s.finish_reason == "length", pairs),
        accuracy=_shift(lambda s: bool(s.correct), judged),
        mean_length=_shift(
            lambda s: s.length, [(a, b) for a, b in pairs if None not in (a.length, b.length)]
        ),
    )


def compare_samples(a: list[Sample], b: list[Sample]) -> Comparison:
    temperatures_a = {s.settings["temperature"] for s in a}
    temperatures_b = {s.settings["temperature"] for s in b}
    single = len(temperatures_a) == len(temperatures_b) == 1
    with_temperature = not (single and temperatures_a != temperatures_b)
    keyed_a, keyed_b = _keyed(a, with_temperature), _keyed(b, with_temperature)
    shared = sorted(keyed_a.keys() & keyed_b.keys(), key=lambda k: (k[2] or 0.0, k[0], k[1]))
    pairs = [(keyed_a[key], keyed_b[key]) for key in shared]
    if not pairs:
        raise ValueError("the two runs share no (prompt, sample, temperature): nothing to pair")
    by_temperature: dict[float | None, list[tuple[Sample, Sample]]] = {}
    for key, pair in zip(shared, pairs, strict=True):
        by_temperature.setdefault(key[2], []).append(pair)
    return Comparison(
        paired_on="prompt, sample, temperature" if with_temperature else "prompt, sample",
        unpaired_a=len(keyed_a) - len(pairs),
        unpaired_b=len(keyed_b) - len(pairs),
        overall=_paired(pairs),
        by_temperature=tuple(
            TemperaturePaired(t, _paired(group)) for t, group in by_temperature.items()
        ),
    )


def compare_runs(run_a: Path, run_b: Path) -> Comparison:
    """Paired comparison of the records of two run directories (A = before, B = after)."""
    samples = []
    for run in (run_a, run_b):
        path = Path(run) / "records.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"{run} holds no records.jsonl: not a scan directory")
        samples.append(list(read_samples(path)))
    return compare_samples(*samples)

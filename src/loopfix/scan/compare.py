"""`compare_runs`: a paired comparison of two scans over the same prompts and seeds.

Records pair on (prompt, sample index, temperature). When each run holds a single temperature
and they differ (a setting change under test), they pair on (prompt, sample index) alone. A
rescue is a pair wrong in A and right in B, a regression the reverse; the exact McNemar test
asks whether rescues and regressions differ by more than chance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopfix.records import Sample, read_samples
from loopfix.scan.stats import mcnemar_exact
from loopfix.scan.summary import is_loop

__all__ = ["compare_runs", "compare_samples"]

PairKey = tuple[str, int, float | None]


def _keyed(samples: list[Sample], with_temperature: bool) -> dict[PairKey, Sample]:
    return {
        (s.prompt_id, s.sample_index, s.settings["temperature"] if with_temperature else None): s
        for s in samples
        if s.finish_reason != "error"
    }


def _paired_block(pairs: list[tuple[Sample, Sample]]) -> dict[str, Any]:
    judged = [(a, b) for a, b in pairs if a.correct is not None and b.correct is not None]
    rescues = sum(not a.correct and bool(b.correct) for a, b in judged)
    regressions = sum(bool(a.correct) and not b.correct for a, b in judged)
    n = len(pairs)

    def rates(metric: Any, group: list[tuple[Sample, Sample]]) -> dict[str, float | None]:
        if not group:
            return {"a": None, "b": None, "delta": None}
        a = sum(metric(x) for x, _ in group) / len(group)
        b = sum(metric(y) for _, y in group) / len(group)
        return {"a": a, "b": b, "delta": b - a}

    return {
        "pairs": n,
        "judged_pairs": len(judged),
        "rescues": rescues,
        "regressions": regressions,
        "mcnemar_p": mcnemar_exact(rescues, regressions),
        "loops_removed": sum(is_loop(a) and not is_loop(b) for a, b in pairs),
        "loops_added": sum(not is_loop(a) and is_loop(b) for a, b in pairs),
        "loop_rate": rates(is_loop, pairs),
        "cut_rate": rates(lambda s: s.finish_reason == "length", pairs),
        "accuracy": rates(lambda s: bool(s.correct), judged),
        "mean_length": rates(
            lambda s: s.length, [(a, b) for a, b in pairs if None not in (a.length, b.length)]
        ),
    }


def compare_samples(a: list[Sample], b: list[Sample]) -> dict[str, Any]:
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
    return {
        "paired_on": "prompt, sample, temperature" if with_temperature else "prompt, sample",
        "unpaired": {"a": len(keyed_a) - len(pairs), "b": len(keyed_b) - len(pairs)},
        "overall": _paired_block(pairs),
        "by_temperature": [
            {"temperature": t, **_paired_block(group)} for t, group in by_temperature.items()
        ],
    }


def compare_runs(run_a: Path, run_b: Path) -> dict[str, Any]:
    """Paired comparison of the records of two run directories (A = before, B = after)."""
    samples = []
    for run in (run_a, run_b):
        path = Path(run) / "records.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"{run} holds no records.jsonl: not a scan directory")
        samples.append(list(read_samples(path)))
    return {"a": str(run_a), "b": str(run_b), **compare_samples(*samples)}

"""Per-setting statistics of a run's records: rates with Wilson 95% intervals, and lengths.

Rates are over the samples that were generated (not the over-long prompts, which are counted
apart, nor requests that failed). `is_loop` is loopfix's one loop definition (docs/metrics.md):
`loops` counts it and `loop_rate` is its rate. `detector_looping` counts the records whose
`loop.looping` is true: the detector found a repetition, which includes the ones the model got
out of by itself, so `loops` <= `detector_looping` + `server_repetition` (docs/scan.md).
Accuracy is over the samples a checker judged; `accuracy_non_looping` over the judged samples
that did not loop. `outcomes` counts each sample's class (`loopfix.scan.outcomes`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

import numpy as np

from loopfix.records import Sample
from loopfix.scan.detection import paper_ngram
from loopfix.scan.stats import wilson_interval
from loopfix.summaries import Rate, ScanSummary, SettingSummary, ThinkingSummary
from loopfix.thinking import THINK_END, thinking_end

__all__ = ["detector_looping", "is_loop", "setting_summary", "summarize", "thinking_summary"]


def is_loop(sample: Sample) -> bool:
    """A loop is a repetition the model did not get out of: the output was cut at the length cap
    and the default detector finds a loop in it, or a server or the `cut` guard ended it for
    repetition (finish reason "repetition"). A passage repeated before the model stopped by
    itself is not a loop: it cost tokens but not the answer. So every loop is also cut (or
    stopped for repetition), and loop rate <= cut rate + the server's repetition stops."""
    if sample.finish_reason == "repetition":
        return True
    return sample.finish_reason == "length" and detector_looping(sample)


def detector_looping(sample: Sample) -> bool:
    """The record's `loop.looping`: the detector's verdict, whether or not the output ended in
    the loop (what `loopfix detect` reports for the record)."""
    return sample.looping


def _rate(hits: int, n: int) -> Rate:
    return Rate(hits / n if n else None, wilson_interval(hits, n))


def _lengths(lengths: list[int]) -> tuple[float | None, float | None, float | None]:
    """Mean, median and 90th percentile."""
    if not lengths:
        return None, None, None
    values = np.asarray(lengths, dtype=float)
    return float(values.mean()), float(np.median(values)), float(np.percentile(values, 90))


def thinking_summary(generated: list[Sample]) -> ThinkingSummary | None:
    """Loops inside vs after the thinking, and its length; None when no sample thought. A loop
    (`is_loop`) runs to the end of its output, so it sits inside the thinking exactly when the
    thinking never closed."""
    thought = [s for s in generated if thinking_end(s.text) is not None]
    if not thought:
        return None
    closed = [THINK_END in s.text for s in thought]
    loops = [is_loop(s) for s in thought]
    mean, median, _ = _lengths(
        [s.meta["thinking_tokens"] for s in thought if "thinking_tokens" in s.meta]
    )
    return ThinkingSummary(
        outputs=len(thought),
        closed=sum(closed),
        loops_in_thinking=sum(loop and not done for loop, done in zip(loops, closed, strict=True)),
        loops_after_thinking=sum(loop and done for loop, done in zip(loops, closed, strict=True)),
        mean_thinking_tokens=mean,
        median_thinking_tokens=median,
    )


def setting_summary(samples: list[Sample]) -> SettingSummary:
    """The statistics of the samples of one decode setting."""
    settings = samples[0].settings
    overlong = [s for s in samples if s.meta.get("overlong")]
    generated = [s for s in samples if s.finish_reason != "error"]
    judged = [s for s in generated if s.correct is not None]
    judged_non_looping = [s for s in judged if not is_loop(s)]
    n = len(generated)
    loops = sum(map(is_loop, generated))
    mean_length, median_length, p90_length = _lengths(
        [s.length for s in generated if s.length is not None]
    )
    return SettingSummary(
        temperature=settings["temperature"],
        settings=settings,
        n=n,
        overlong=len(overlong),
        errors=len(samples) - len(overlong) - n,
        loops=loops,
        loop_rate=_rate(loops, n),
        detector_looping=sum(map(detector_looping, generated)),
        paper_loop_rate=_rate(sum(bool(s.meta.get("paper_loop")) for s in generated), n),
        paper_ngram=paper_ngram(int(settings["max_new_tokens"])),
        cut_rate=_rate(sum(s.finish_reason == "length" for s in generated), n),
        server_repetition=sum(s.finish_reason == "repetition" for s in generated),
        judged=len(judged),
        accuracy=_rate(sum(bool(s.correct) for s in judged), len(judged)),
        judged_non_looping=len(judged_non_looping),
        accuracy_non_looping=_rate(
            sum(bool(s.correct) for s in judged_non_looping), len(judged_non_looping)
        ),
        mean_length=mean_length,
        median_length=median_length,
        p90_length=p90_length,
        unknown_lengths=sum(s.length is None for s in generated),
        outcomes=dict(Counter(s.meta["outcome"] for s in generated if "outcome" in s.meta)),
        thinking=thinking_summary(generated),
    )


def summarize(records: Iterable[Sample]) -> ScanSummary:
    """One summary per decode setting, by temperature; the run's total of each count; the
    over-long prompts."""
    groups: dict[str, list[Sample]] = {}
    for sample in records:
        groups.setdefault(json.dumps(sample.settings, sort_keys=True), []).append(sample)
    ordered = sorted(groups.values(), key=lambda group: group[0].settings["temperature"])
    settings = tuple(setting_summary(group) for group in ordered)
    return ScanSummary(
        settings=settings,
        records=sum(len(group) for group in ordered),
        loops=sum(setting.loops for setting in settings),
        detector_looping=sum(setting.detector_looping for setting in settings),
        overlong_prompts=tuple(
            sorted({s.prompt_id for g in ordered for s in g if s.meta.get("overlong")})
        ),
    )

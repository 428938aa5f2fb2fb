"""How a scan calls the detector: the default verdict, and the paper's n-gram metric scaled for
short outputs.

The paper (arXiv 2512.12895) calls a response looping when any 30-gram occurs >= 20 times, on
responses of up to ~30k tokens. A loop needs about n * k tokens to reach that (a unit of ~n
tokens, k times), so on a short cap the metric can never fire. We keep the paper's values when
n * k fits in a third of the cap (max_new_tokens >= 1,800) and otherwise shrink n and k by the
same factor sqrt(cap / 1,800), keeping the 3:2 ratio and n * k <= cap / 3, with floors n >= 2 and
k >= 2. Example: a 48-token cap gives (5, 3); 256 gives (11, 8); 1,000 gives (22, 15).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from loopfix.detect import (
    DetectConfig,
    LoopVerdict,
    detect_text,
    detect_tokens,
    find_ngram_loop,
    split_text,
)

__all__ = [
    "PAPER_K",
    "PAPER_N",
    "judge_loop",
    "paper_loop",
    "paper_ngram",
    "scan_detect_config",
]

PAPER_N, PAPER_K = 30, 20
_FULL_SCALE_CAP = 3 * PAPER_N * PAPER_K  # 1,800 tokens


def paper_ngram(max_new_tokens: int) -> tuple[int, int]:
    """(n, k) of the paper metric for a given cap (see the module docstring)."""
    if max_new_tokens >= _FULL_SCALE_CAP:
        return PAPER_N, PAPER_K
    factor = math.sqrt(max_new_tokens / _FULL_SCALE_CAP)
    return max(2, round(PAPER_N * factor)), max(2, round(PAPER_K * factor))


def scan_detect_config(max_new_tokens: int) -> DetectConfig:
    """The default detector, with the periodic run and n-gram tier shortened for short caps:
    a periodic tail must cover min(64, cap / 2) tokens, so a loop can fill half the output."""
    n, k = paper_ngram(max_new_tokens)
    return DetectConfig.model_validate(
        {"min_span": max(8, min(64, max_new_tokens // 2)), "ngram_n": n, "ngram_k": k}
    )


def judge_loop(
    tokens: list[int],
    text: str,
    tokenizer: Any,
    config: DetectConfig,
    top1: list[float] | None = None,
    entropy: list[float] | None = None,
    finish_reason: str | None = None,
) -> LoopVerdict:
    """The default verdict on one output: all text tiers, positions in the model's tokens when
    a tokenizer is at hand, early-warning fields from captured per-step statistics; an output cut
    at the token limit (`finish_reason == "length"`) lets a repeated tail running to the cut
    decide (`cut=True` of `detect_text`)."""
    cut = None if finish_reason in (None, "error") else finish_reason in ("length", "repetition")
    verdict = detect_text(text, tokenizer if tokens else None, config, cut=cut)
    if top1 is None and entropy is None:
        return verdict
    warning = detect_tokens(tokens, config, top1=top1, entropies=entropy)
    return replace(
        verdict,
        entropy_streak_onset=warning.entropy_streak_onset,
        flywheel=warning.flywheel,
        top1_trend=warning.top1_trend,
    )


def paper_loop(tokens: list[int], text: str, max_new_tokens: int) -> bool:
    """The paper's metric on the model's tokens (or on words when a server returned none)."""
    n, k = paper_ngram(max_new_tokens)
    ids = tokens if tokens else split_text(text).ids
    return find_ngram_loop(ids, n, k) is not None

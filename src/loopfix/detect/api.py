"""The default detector: `detect_tokens` and `detect_text`, combining the tiers.

Pipeline (the first tier that finds a loop wins):
1. verbatim: an exactly periodic tail (ending within `tail_slack` tokens of the end), then the
   paper's n-gram metric anywhere in the sequence;
2. near: a periodic tail once numbers are masked (text, or tokens with `token_classes`);
3. flood: a short unit flooding a stretch anywhere (text only; kind `verbatim`);
4. segment: lines and sentences recurring exactly at the tail (text only);
5. semantic: segments restating each other at the tail (text only; lexical or embeddings),
   then stagnation: a long prose tail without new content words, then (off by default) restated
   steps: the last steps bring no new word or number (kind `semantic`);
6. cut: only when the caller says the output was cut at the token limit (`cut=True`) and nothing
   above fired, the periodic, near and segment checks again with the `cut_*` thresholds: a
   repeated or templated tail running to the cut is strong evidence. `cut=None` (unknown) and
   `cut=False` keep the precise defaults;
7. early warning: entropy streak and confidence flywheel from per-step log-probs (tokens).

Every loop verdict says which evidence decided it (`decided_by`) and how far over that check's
threshold it lies (`score`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .config import DetectConfig
from .early_warning import step_signals, with_early_warning
from .flood import find_flood
from .ids import as_ids
from .near import find_near_loop
from .ngram import find_ngram_loop, occurrences
from .normalize import classes_from_mapping
from .periodic import find_tail, tail_verdict
from .segment import find_segment_loop
from .semantic import find_semantic_loop
from .stagnation import find_stagnant_tail
from .steps import find_restated_steps
from .text import TokenizedText, split_text, tokenize_with
from .verdict import NOT_LOOPING, LoopVerdict, Span, strength_score


def _ngram_verdict(ids: np.ndarray, config: DetectConfig) -> LoopVerdict | None:
    """The n-gram metric as a verdict: the densest chain of occurrences of the n-gram (gaps at
    most twice the typical gap) gives onset, period and repeats."""
    found = find_ngram_loop(ids, config.ngram_n, config.ngram_k)
    if found is None:
        return None
    starts = occurrences(ids, found.first_position, config.ngram_n)
    gaps = np.diff(starts)
    breaks = np.flatnonzero(gaps > 2 * max(1, int(np.median(gaps))))
    chains = np.split(starts, breaks + 1)
    chain = max(chains, key=len)
    period = int(np.median(np.diff(chain))) if len(chain) > 1 else config.ngram_n
    onset = int(chain[0])
    return LoopVerdict(
        looping=True,
        kind="verbatim",
        onset=onset,
        period=period,
        repeats=len(chain),
        span=Span(onset, int(chain[-1]) + config.ngram_n),
        decided_by="ngram",
        score=strength_score(len(starts) / config.ngram_k),
    )


def _enough_words(verdict: LoopVerdict, words: np.ndarray, config: DetectConfig) -> bool:
    """A unit without words (matrix rows, table rules) must repeat `wordless_min_repeats` times."""
    assert verdict.onset is not None and verdict.period is not None and verdict.repeats is not None
    unit = words[verdict.onset : verdict.onset + verdict.period]
    return bool(unit.any()) or verdict.repeats >= config.wordless_min_repeats


def _periodic_verdict(
    ids: np.ndarray, config: DetectConfig, words: np.ndarray | None
) -> LoopVerdict | None:
    found = find_tail(ids, config, config.tail_slack)
    if found is None:
        return None
    period, run, end = found
    verdict = tail_verdict(end, period, run)
    if words is not None and not _enough_words(verdict, words, config):
        return None
    needed = max(config.min_repeats * period, config.min_span)
    return replace(
        verdict, decided_by="periodic-tail", score=strength_score((run + period) / needed)
    )


def _near_verdict(
    ids: np.ndarray,
    config: DetectConfig,
    classes: np.ndarray | None,
    words: np.ndarray | None,
    tokens: TokenizedText | None,
    at_cut: bool,
) -> LoopVerdict | None:
    if not config.near or classes is None or not (classes >= 0).any():
        return None
    content = ~(classes >= 0) if words is None else words
    number_of = None if tokens is None else tokens.number_in
    return find_near_loop(ids, classes, content, config, number_of, at_cut)


def _token_tiers(
    ids: np.ndarray,
    config: DetectConfig,
    classes: np.ndarray | None,
    words: np.ndarray | None,
    tokens: TokenizedText | None = None,
) -> LoopVerdict | None:
    verdict = _periodic_verdict(ids, config, words)
    if verdict is None and config.ngram:
        verdict = _ngram_verdict(ids, config)
    return verdict or _near_verdict(ids, config, classes, words, tokens, at_cut=False)


def at_cut_config(config: DetectConfig) -> DetectConfig:
    """The thresholds used when the output is known to be cut at the token limit."""
    return config.model_copy(
        update={
            "min_span": min(config.min_span, config.cut.min_span),
            "wordless_min_repeats": min(
                config.wordless_min_repeats, config.cut.wordless_min_repeats
            ),
            "semantic_min_repeats": min(
                config.semantic_min_repeats, config.cut.semantic_min_repeats
            ),
        }
    )


def _cut_tiers(
    ids: np.ndarray,
    config: DetectConfig,
    classes: np.ndarray | None,
    words: np.ndarray | None,
    tokens: TokenizedText | None = None,
) -> LoopVerdict | None:
    """The checks that a cut at the token limit relaxes, marked `+cut` in `decided_by`."""
    relaxed = at_cut_config(config)
    verdict = _periodic_verdict(ids, relaxed, words) or _near_verdict(
        ids, relaxed, classes, words, tokens, at_cut=True
    )
    if verdict is None and tokens is not None and config.segment:
        verdict = find_segment_loop(tokens, relaxed)
    if verdict is None and tokens is not None:
        verdict = find_semantic_loop(tokens, relaxed)
    if verdict is None:
        return None
    return replace(verdict, decided_by=f"{verdict.decided_by}+cut")


def detect_tokens(
    tokens: Sequence[Hashable] | np.ndarray,
    config: DetectConfig | None = None,
    *,
    logprobs: Sequence[Sequence[float]] | Sequence[float] | np.ndarray | None = None,
    entropies: Sequence[float] | np.ndarray | None = None,
    top1: Sequence[float] | np.ndarray | None = None,
    token_classes: Mapping[int, int] | None = None,
    cut: bool | None = None,
) -> LoopVerdict:
    """Detect a loop in a token sequence (model token ids, or any hashable tokens).

    Runs the verbatim tier, the near tier when `token_classes` maps volatile token ids (e.g.
    every digit token) to a class, and fills the early-warning fields from `logprobs`,
    `entropies` or `top1` (one value or row per token; see `early_warning.step_signals`).
    `cut`: whether the sequence was cut at the token limit (`finish_reason == "length"`); None
    when unknown. Flood, segment and semantic tiers need text: use `detect_text`.
    """
    config = config or DetectConfig()
    ids = as_ids(tokens)
    classes = classes_from_mapping(ids, token_classes) if token_classes else None
    verdict = _token_tiers(ids, config, classes, None)
    if verdict is None and cut:
        verdict = _cut_tiers(ids, config, classes, None)
    verdict = verdict or NOT_LOOPING
    step_entropy, step_top1 = step_signals(logprobs, entropies, top1)
    return with_early_warning(verdict, config, step_entropy, step_top1)


def _with_text(verdict: LoopVerdict, tokens: TokenizedText) -> LoopVerdict:
    """Add character offsets and the unit's text to a verdict in the tokens of `tokens`."""
    assert verdict.span is not None and verdict.onset is not None and verdict.period is not None
    char_start = tokens.char_of(verdict.onset)
    end = verdict.span.end
    return replace(
        verdict,
        span=Span(verdict.span.start, end, char_start, int(tokens.ends[end - 1])),
        evidence=tokens.text[char_start : tokens.char_of(verdict.onset + verdict.period)],
    )


def _in_tokens_of(verdict: LoopVerdict, tokens: TokenizedText) -> LoopVerdict:
    """Re-express a text-tier verdict (built-in tokens) in the tokens of `tokens`."""
    assert verdict.span is not None and verdict.span.char_start is not None
    assert verdict.span.char_end is not None and verdict.evidence is not None
    onset = tokens.token_at(verdict.span.char_start)
    unit_end = tokens.token_at(verdict.span.char_start + len(verdict.evidence))
    end = max(onset + 1, tokens.token_at(verdict.span.char_end))
    return replace(
        verdict,
        onset=onset,
        period=unit_end - onset,
        span=Span(onset, end, verdict.span.char_start, verdict.span.char_end),
    )


def detect_text(
    text: str,
    tokenizer: Any = None,
    config: DetectConfig | None = None,
    *,
    cut: bool | None = None,
) -> LoopVerdict:
    """Detect a loop in text; token positions refer to `tokenizer`'s tokens when one is given
    (an HF tokenizer or any object with `encode`/`decode`), else to the built-in segmentation
    (words and punctuation, CJK per character, see `text.split_text`).

    `cut`: whether the output was cut at the token limit (`finish_reason == "length"`); None when
    unknown. Only `cut=True` relaxes the thresholds (step 6 of the module docstring).
    """
    config = config or DetectConfig()
    tokens = split_text(text) if tokenizer is None else tokenize_with(text, tokenizer)
    classes = np.where(tokens.volatile, 0, -1)
    verdict = _token_tiers(tokens.ids, config, classes, tokens.words, tokens)
    if verdict is not None:
        return _with_text(verdict, tokens)
    builtin = tokens if tokenizer is None else split_text(text)
    tiers = (
        (True, find_flood),
        (config.segment, find_segment_loop),
        # A restatement cycle is the weakest evidence; an output that ended by itself left it.
        (cut is not False, find_semantic_loop),
        # So is a tail without new words (stagnation.py); same condition.
        (cut is not False, find_stagnant_tail),
        # And so are last steps that restate earlier ones (steps.py, off by default).
        (cut is not False, find_restated_steps),
    )
    for enabled, tier in tiers:
        found = tier(builtin, config) if enabled else None
        if found is not None:
            return found if tokenizer is None else _in_tokens_of(found, tokens)
    if cut:
        found = _cut_tiers(
            builtin.ids, config, np.where(builtin.volatile, 0, -1), builtin.words, builtin
        )
        if found is not None:
            if found.span is not None and found.span.char_start is None:
                found = _with_text(found, builtin)
            return found if tokenizer is None else _in_tokens_of(found, tokens)
    return NOT_LOOPING

"""Flood tier: a short unit flooding a stretch of text anywhere, not only at the tail.

The periodic tail needs a loop that runs to the end and covers `min_span` tokens; a model that
floods one word forty times and then breaks out ("prevent prevent ... -- sorry, that output got
corrupted"), or floods a CJK word between stray digits and commas, escapes it. Here a stretch is a
flood when every window of `flood_window` tokens in it holds at most `flood_max_types` distinct
tokens and at least a quarter of them are words or special tokens (a zero matrix or a table rule
is wordless and stays clean; `<｜begin▁of▁sentence｜>` to the cap is not).

Character-level collapse hides inside single tokens ("8888888888888888", "aaaaaaaaaaaaaaaaaaaaa"):
`flood_char_tokens` tokens of letters or digits that each repeat one character at least
`flood_char_run` times are a flood too (a long number has a run of zeros, not three such runs).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .config import DetectConfig
from .text import TokenizedText
from .verdict import LoopVerdict, Span, strength_score

# A flood's content tokens (words, special tokens) must make up this share of each window.
_CONTENT_SHARE = 0.25
# The unit's period is the smallest shift under which this share of the stretch repeats.
_PERIOD_MATCH = 0.6


def content_tokens(tokens: TokenizedText) -> np.ndarray:
    """Words and special tokens (`<|im_end|>`, `<｜begin▁of▁sentence｜>`, `</s>`)."""
    text = tokens.text
    special = np.array(
        [
            e - s > 2 and text[s] == "<" and text[e - 1] == ">"
            for s, e in zip(tokens.starts, tokens.ends, strict=True)
        ],
        dtype=bool,
    )
    return tokens.words | special


def _flooded_windows(
    ids: np.ndarray, content: np.ndarray, window: int, max_types: int
) -> np.ndarray:
    """Whether the window starting at each position is flooded (see the module docstring)."""
    count = len(ids) - window + 1
    flooded = np.zeros(max(count, 0), dtype=bool)
    if count <= 0:
        return flooded
    seen: Counter[int] = Counter(ids[:window].tolist())
    content_count = np.concatenate([[0], np.cumsum(content)])
    need = _CONTENT_SHARE * window
    for start in range(count):
        if start:
            old, new = int(ids[start - 1]), int(ids[start + window - 1])
            seen[new] += 1
            seen[old] -= 1
            if not seen[old]:
                del seen[old]
        if len(seen) <= max_types:
            flooded[start] = content_count[start + window] - content_count[start] >= need
    return flooded


def _period(ids: np.ndarray, max_types: int) -> int:
    for period in range(1, min(max_types, len(ids) - 1) + 1):
        if np.mean(ids[period:] == ids[:-period]) >= _PERIOD_MATCH:
            return period
    return max_types


def _char_flood(tokens: TokenizedText, config: DetectConfig) -> LoopVerdict | None:
    text, run = tokens.text, config.flood_char_run
    found = [
        index
        for index, (start, end) in enumerate(zip(tokens.starts, tokens.ends, strict=True))
        if end - start >= run
        and text[start].isalnum()
        and text[start:end] == text[start] * (end - start)
    ]
    if len(found) < config.flood_char_tokens:
        return None
    first, last = found[0], found[-1]
    period = max(1, (last - first) // (len(found) - 1))
    char_start = tokens.char_of(first)
    return LoopVerdict(
        looping=True,
        kind="verbatim",
        onset=first,
        period=period,
        repeats=len(found),
        span=Span(first, last + 1, char_start, int(tokens.ends[last])),
        evidence=text[char_start : int(tokens.ends[first])],
        decided_by="flood",
        score=strength_score(len(found) / config.flood_char_tokens),
    )


def find_flood(tokens: TokenizedText, config: DetectConfig) -> LoopVerdict | None:
    """The first flooded stretch of built-in-segmented text, as a `verbatim` verdict (or the
    character-level flood), or None."""
    ids = tokens.ids
    window = config.flood_window
    flooded = _flooded_windows(ids, content_tokens(tokens), window, config.flood_max_types)
    starts = np.flatnonzero(flooded)
    if not starts.size:
        return _char_flood(tokens, config)
    first = int(starts[0])
    gaps = np.flatnonzero(np.diff(starts) > 1)
    last = int(starts[gaps[0]]) if gaps.size else int(starts[-1])
    end = last + window
    period = _period(ids[first:end], config.flood_max_types)
    # The window may open on a token or two before the unit starts repeating.
    while first + period < end and ids[first] != ids[first + period]:
        first += 1
    strength = (end - first) / window
    char_start = tokens.char_of(first)
    return LoopVerdict(
        looping=True,
        kind="verbatim",
        onset=first,
        period=period,
        repeats=(end - first) // period,
        span=Span(first, end, char_start, int(tokens.ends[end - 1])),
        evidence=tokens.text[char_start : tokens.char_of(first + period)],
        decided_by="flood",
        score=strength_score(strength),
    )

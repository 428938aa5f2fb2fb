"""Segment tier: a tail where lines and sentences keep recurring, whatever the cycle's length.

Text is cut into segments (lines, and sentences inside lines). Each segment is matched to the
latest earlier segment it repeats within a window: exactly after case and spacing here, by
meaning in semantic.py. `find_recurrent_tail` then looks for a tail region made of recurring
segments (at most `max_novelty` of its tokens new, never two new segments in a row) and counts
how often the region's first cycle fits into it. A chorus between different verses is not such a
region: each verse is new text and cuts the region short.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .config import DetectConfig
from .text import TokenizedText
from .verdict import LoopKind, LoopVerdict, Span, strength_score

_SENTENCE_END = set(".!?。！？…")
_CJK_SENTENCE_END = set("。！？")
# matches[i] for a segment without words: it neither recurs nor counts as new text.
NEUTRAL = -2
NEW = -1


@dataclass(frozen=True)
class Segment:
    """A line or sentence: tokens `[start, end)`, its word count and its normalised text."""

    start: int
    end: int
    words: int
    key: str


@dataclass(frozen=True)
class Cycle:
    """Segments `[first, stop)` cycle; `[first, first_repeat)` is the first cycle."""

    first: int
    first_repeat: int
    stop: int
    repeats: int


def split_segments(tokens: TokenizedText, sentences: bool = True) -> list[Segment]:
    """Lines (split at newline tokens) and, with `sentences`, sentences (split after ., !, ?,
    。 and the like when whitespace or a line end follows) of built-in-segmented text."""
    text = tokens.text
    segments: list[Segment] = []
    start = 0

    def close(end: int) -> None:
        if end > start:
            spans = zip(tokens.starts[start:end], tokens.ends[start:end], strict=True)
            key = " ".join(text[s:e].lower() for s, e in spans)
            words = int(tokens.words[start:end].sum())
            segments.append(Segment(start, end, words, key))

    for index in range(len(tokens)):
        first = text[tokens.starts[index]]
        if first in "\r\n":
            close(index)
            start = index + 1
            continue
        piece_end = int(tokens.ends[index])
        if (
            sentences
            and first in _SENTENCE_END
            and (first in _CJK_SENTENCE_END or piece_end == len(text) or text[piece_end].isspace())
        ):
            close(index + 1)
            start = index + 1
    close(len(tokens))
    return segments


def exact_matches(segments: Sequence[Segment], window: int) -> list[int]:
    """For each segment, the latest earlier segment with the same key within `window` segments
    (NEW if none); NEUTRAL for segments without words, except rows of numbers seen for the first
    time, which are NEW: data rows under a repeated header (a calendar's weekday line, a table
    header printed per page) are progress, not a cycle."""
    latest: dict[str, int] = {}
    matches: list[int] = []
    for index, segment in enumerate(segments):
        previous = latest.get(segment.key, NEW)
        recurs = previous >= 0 and index - previous <= window
        latest[segment.key] = index
        if segment.words == 0:
            new_numbers = not recurs and any(ch.isdigit() for ch in segment.key)
            matches.append(NEW if new_numbers else NEUTRAL)
        else:
            matches.append(previous if recurs else NEW)
    return matches


def find_recurrent_tail(
    segments: Sequence[Segment], matches: Sequence[int], min_repeats: int, config: DetectConfig
) -> Cycle | None:
    """The cycling tail region described in the module docstring, if it holds `min_repeats`
    cycles, `segment_min_words` words per cycle and `min_span` tokens."""
    count = len(segments)
    region, new_in_row, index = count, 0, count - 1
    while index >= 0 and new_in_row < 2:
        if matches[index] >= 0:
            region, new_in_row = index, 0
        elif matches[index] == NEW:
            new_in_row += 1
        index -= 1
    if region == count:
        return None
    recurring = [i for i in range(region, count) if matches[i] >= 0]
    first = min(matches[i] for i in recurring)
    sizes = np.array([s.end - s.start for s in segments], dtype=np.int64)
    # A trailing new segment is most likely the next copy cut off by the length limit.
    body = count - 1 if matches[count - 1] == NEW else count
    new_tokens = sum(sizes[i] for i in range(region, body) if matches[i] == NEW)
    counted = sum(sizes[i] for i in range(region, body) if matches[i] != NEUTRAL)
    if counted == 0 or new_tokens > config.max_novelty * counted:
        return None
    repeats = (count - first) // (region - first)
    unit_words = sum(segments[i].words for i in range(first, region))
    span = segments[-1].end - segments[first].start
    if repeats < min_repeats or unit_words < config.segment_min_words or span < config.min_span:
        return None
    return Cycle(first, region, count, repeats)


def cycle_verdict(
    kind: LoopKind,
    cycle: Cycle,
    segments: Sequence[Segment],
    tokens: TokenizedText,
    min_repeats: int,
) -> LoopVerdict:
    """The verdict for a cycle, in the tokens (and characters) of `tokens`; `min_repeats` is
    the number of cycles the tier needed (for the score)."""
    onset = segments[cycle.first].start
    unit_end = segments[cycle.first_repeat].start
    end = segments[cycle.stop - 1].end
    char_start = tokens.char_of(onset)
    return LoopVerdict(
        looping=True,
        kind=kind,
        onset=onset,
        period=unit_end - onset,
        repeats=cycle.repeats,
        span=Span(onset, end, char_start, int(tokens.ends[end - 1])),
        evidence=tokens.text[char_start : tokens.char_of(unit_end)],
        decided_by=kind,
        score=strength_score(cycle.repeats / min_repeats),
    )


def find_segment_loop(tokens: TokenizedText, config: DetectConfig) -> LoopVerdict | None:
    """Segment tier on built-in-segmented text."""
    segments = split_segments(tokens)
    if not segments:
        return None
    matches = exact_matches(segments, config.segment_max_cycle)
    cycle = find_recurrent_tail(segments, matches, config.segment_min_repeats, config)
    if cycle is None:
        return None
    return cycle_verdict("segment", cycle, segments, tokens, config.segment_min_repeats)

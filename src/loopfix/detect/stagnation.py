"""Stagnation check (kind `semantic`): a long prose tail that brings no new content words.

Re-verification cycles of reasoning models ("So, 3 pints. Wait, let me double-check ... 0.75
times 4 is 3. So, 3 pints. Alternatively ...") restate the same result in new sentences, so
neither exact lines (segment tier) nor line-to-line restatements (semantic tier) recur. What
they do not do is say anything new: the words of the tail were all used before. Reasoning that
progresses, even when it re-checks a result or is cut mid-step, keeps introducing words (a new
quantity's name, a new route, the next sub-question).

The measure is the novelty of the tail: the share of its content words (lower-cased words minus
function words, crude suffix stemming so "divided"/"dividing"/"divides" count once) that occur
for the first time in the text. The tail is the last `stagnation_tail` share of the text's
content words, so it grows with the text: a stagnant stretch must cover a third of the output,
not a few sentences. Guards, each against a class of hard negatives that also reuse their
vocabulary:
- the tail must hold `stagnation_min_words` content words (short answers are never judged);
- it must be prose: at least `stagnation_min_prose` of its tokens are words. Tables, calendars,
  code, LaTeX and number lists legitimately repeat a small vocabulary between new data;
- it must not be a list: at most `stagnation_max_list_lines` of its lines start with a list
  marker (`12.`, `3)`, `-`, `*`, `•`). A long enumeration recombines a small vocabulary into
  distinct items ("Write about a talking cat who finds a map."), each item new though its words
  are not;
- numbers do not count as words either way (a table of new values is not prose, and a
  restatement repeats its numbers).

This looks at the whole text once per call (O(length)); it is a `detect_text` tier, not part of
the online monitor.
"""

from __future__ import annotations

import re

from .config import DetectConfig
from .semantic import _FUNCTION_WORDS
from .text import TokenizedText
from .verdict import LoopVerdict, Span, strength_score

_SUFFIXES = ("ing", "ed", "es", "s")
_LETTERS = re.compile(r"[^\W\d_]+")
_LIST_ITEM = re.compile(r"\s*(?:\d+[.)]|[-*\u2022])\s")


def stem(word: str) -> str:
    """A crude stem: lower case without one common inflection suffix (keeping >= 3 letters)."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _content_tokens(tokens: TokenizedText) -> list[tuple[int, str]]:
    """(token index, stem) of every content word, in text order."""
    found = []
    for index in range(len(tokens)):
        if not tokens.words[index]:
            continue
        piece = tokens.text[int(tokens.starts[index]) : int(tokens.ends[index])]
        for word in _LETTERS.findall(piece):
            stemmed = stem(word)
            if stemmed not in _FUNCTION_WORDS and word.lower() not in _FUNCTION_WORDS:
                found.append((index, stemmed))
    return found


def _line_starts(tokens: TokenizedText, start: int) -> list[int]:
    """Token indices at or after `start` that begin a line (the token after a newline)."""
    text = tokens.text
    return [
        index + 1
        for index in range(start, len(tokens) - 1)
        if text[int(tokens.starts[index])] in "\r\n"
    ]


def _list_share(text: str) -> float:
    """Share of the non-empty lines of `text` that start with a list marker."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return 0.0
    return sum(bool(_LIST_ITEM.match(line)) for line in lines) / len(lines)


def find_stagnant_tail(tokens: TokenizedText, config: DetectConfig) -> LoopVerdict | None:
    """The stagnation check on built-in-segmented text (None when the tail says something new,
    is too short or is not prose)."""
    # A semantic-kind check: `semantic="off"` switches it off with the semantic tier.
    if not config.stagnation or config.semantic == "off":
        return None
    content = _content_tokens(tokens)
    tail_start = int(len(content) * (1.0 - config.stagnation_tail))
    tail = content[tail_start:]
    if len(tail) < config.stagnation_min_words:
        return None
    onset = tail[0][0]
    span_tokens = len(tokens) - onset
    prose = int(tokens.words[onset:].sum()) / span_tokens
    if prose < config.stagnation_min_prose:
        return None
    if _list_share(tokens.text[tokens.char_of(onset) :]) > config.stagnation_max_list_lines:
        return None
    seen = {word for _, word in content[:tail_start]}
    new = 0
    for _, word in tail:
        if word not in seen:
            new += 1
            seen.add(word)
    novelty = new / len(tail)
    if novelty > config.stagnation_max_novelty:
        return None
    # The unit reported is the tail's first line (up to the next line start), and `repeats`
    # the lines of the tail: restatement rounds, none of which says anything new.
    lines = [start for start in _line_starts(tokens, onset) if start < len(tokens)]
    unit_end = lines[0] if lines else len(tokens)
    char_start = tokens.char_of(onset)
    # 0.5 at the novelty threshold, 0.75 for a tail without a single new word.
    strength = 1.0 + (config.stagnation_max_novelty - novelty) / config.stagnation_max_novelty
    return LoopVerdict(
        looping=True,
        kind="semantic",
        onset=onset,
        period=unit_end - onset,
        repeats=len(lines) + 1,
        span=Span(onset, len(tokens), char_start, int(tokens.ends[-1])),
        evidence=tokens.text[char_start : tokens.char_of(unit_end)],
        decided_by="stagnation",
        score=strength_score(strength),
    )

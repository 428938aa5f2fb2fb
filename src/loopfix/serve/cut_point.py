"""Where a found loop is cut in a streamed part: the tokens to keep (all released text, at
least the unit stated once, moved up to a sentence end) and the text of the token to ban."""

from __future__ import annotations

from loopfix.serve.watch import PartWatcher

__all__ = ["at_sentence_end", "banned_piece", "tokens_within"]


def tokens_within(watcher: PartWatcher, chars: int) -> int:
    """Tokens that end at or before character `chars`."""
    count = watcher.first_token
    while count < watcher.tokens and watcher.end_of_token(count) <= chars:
        count += 1
    return count


_SENTENCE_ENDS = (".", "!", "?", "\n", "。")


def at_sentence_end(watcher: PartWatcher, kept: int, period: int) -> int:
    """Move the cut up to a period of tokens later so the kept text ends a sentence: a unit
    found as ". We go ... again" is kept as "We go ... again." (any rotation of the unit is
    the same loop), and the repeat's banned token starts a sentence."""
    # Tokens before first_token were released and forgotten (stop): the cut cannot move there.
    for end in range(max(kept, watcher.first_token + 1), min(kept + period, watcher.tokens)):
        if _piece(watcher, end - 1).rstrip(" \t").endswith(_SENTENCE_ENDS):
            return end
    return kept


def _piece(watcher: PartWatcher, index: int) -> str:
    """Token `index` with the whitespace before it."""
    start = watcher.end_of_token(index - 1) if index > watcher.first_token else watcher.start
    return watcher.text[start - watcher.start : watcher.end_of_token(index) - watcher.start]


def banned_piece(watcher: PartWatcher, kept: int, period: int) -> str:
    """The text of the loop's next token after `kept` tokens (with its leading whitespace): the
    token itself when it was generated, else the one a period earlier (the tail is periodic)."""
    index = kept
    while index >= watcher.tokens:
        index -= period
    return _piece(watcher, index)

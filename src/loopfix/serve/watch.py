"""`PartWatcher`: online loop detection on one streamed text (one choice's content or reasoning).

Text arrives in arbitrary deltas. The watcher cuts it into the detector's built-in tokens
(`loopfix.detect.split_text`: words, numbers, punctuation runs, newlines) as soon as a token is
complete (it is followed by whitespace: a token never spans whitespace), and feeds two streams of
one `LoopMonitor`: the tokens themselves (the verbatim tier) and the tokens with every number
masked (the near tier: "Step 7: check again." repeating with a counter). A monitor hit must pass
the same content rules as `detect_text`: a unit without any word needs `wordless_min_repeats`
copies (rows of an empty table), a near unit with fewer than `near_min_words` words needs
`near_counter_repeats` copies (a requested numbered list of 100 items is not a loop). Such a hit
is kept pending and re-checked on every token until it qualifies or its run breaks.

Memory: the monitor's O(max_period) window, the word flags of the last max_period tokens, and,
only when `keep_text` is set, the text and token ends (a rescue must resend the text; a holdback
must find where its tokens end). `forget` drops text the caller no longer needs.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from loopfix.detect import DetectConfig, LoopMonitor, LoopVerdict, split_text

_TRAILING_WORD = re.compile(r"\S*\Z")
# A delta without whitespace for this long is tokenized anyway, so the carried text stays bounded
# (CJK text has no spaces; its characters are tokens of their own).
_MAX_CARRY = 256
_ID_MASK = 0x7FFFFFFF
_NUMBER = 1  # every number token of the masked stream; hashed tokens are forced even (below)
_STREAMS = ("verbatim", "near")


@dataclass(frozen=True)
class Detection:
    """A loop found in one part: `onset` and `period` in the part's tokens (counted from its
    start), and `keep` the character offset just after the first copy of the unit (the text
    before the loop's repeat), when the watcher keeps text."""

    kind: str
    onset: int
    period: int
    repeats: int
    keep: int | None


def _token_id(piece: str) -> int:
    # Python's string hash is stable within a process, which is all a stream needs; the low bit
    # is cleared so no word can collide with the number class.
    return hash("\n" if piece == "\r\n" else piece) & _ID_MASK & ~1


class PartWatcher:
    """Watches one text stream; `feed` returns a `Detection` the first time a loop qualifies."""

    def __init__(self, config: DetectConfig, *, keep_text: bool):
        self.config = config
        self.keep_text = keep_text
        self.tokens = 0  # complete tokens fed so far
        self.text = ""  # the text from `self.start` on (only when keep_text)
        self.start = 0  # character offset of `self.text` in the whole part
        self.ends: list[int] = []  # end offset of each kept token (only when keep_text)
        self.first_token = 0  # index of the token `self.ends[0]` belongs to
        self._length = 0  # characters fed so far
        self._carry = ""
        self._origin = 0  # token index where the monitor's streams start
        self._monitor = LoopMonitor(config, n_streams=len(_STREAMS))
        self._words: deque[bool] = deque(maxlen=config.max_period)
        self._pending: list[int] = []  # monitor streams with a hit that awaits its content rule
        self.detection: Detection | None = None

    @property
    def length(self) -> int:
        """Characters of the part seen so far."""
        return self._length

    def feed(self, delta: str) -> Detection | None:
        """Add streamed text; a Detection when a loop first qualifies."""
        self._length += len(delta)
        if self.keep_text:
            self.text += delta
        text = self._carry + delta
        trailing = _TRAILING_WORD.search(text)
        split = trailing.start() if trailing is not None else len(text)
        if len(text) - split > _MAX_CARRY:
            split = len(text)
        self._carry = text[split:]
        return self._tokens(text[:split], self._length - len(text))

    def finish(self) -> Detection | None:
        """The stream ended: the carried word is complete."""
        text, self._carry = self._carry, ""
        return self._tokens(text, self._length - len(text))

    def rewind(self, keep: int) -> None:
        """Continue from character `keep` (a rescue): later text and tokens are forgotten and the
        monitor starts afresh, so only new text can make the next loop."""
        assert self.keep_text and keep >= self.start
        count = sum(1 for end in self.ends if end <= keep)
        self.tokens = self.first_token + count
        del self.ends[count:]
        self.text = self.text[: keep - self.start]
        self._length = keep
        self._carry = ""
        self._origin = self.tokens
        self._monitor.reset()
        self._words.clear()
        self._pending = []
        self.detection = None

    def forget(self, before: int) -> None:
        """Drop kept text (and token ends) before character `before`; bounded memory for callers
        that never resend it."""
        if before <= self.start:
            return
        dropped = 0
        while dropped < len(self.ends) and self.ends[dropped] <= before:
            dropped += 1
        del self.ends[:dropped]
        self.first_token += dropped
        self.text = self.text[before - self.start :]
        self.start = before

    def end_of_token(self, index: int) -> int:
        """Character offset where token `index` ends (it must still be kept)."""
        return self.ends[index - self.first_token]

    def _tokens(self, text: str, offset: int) -> Detection | None:
        if not text:
            return None
        pieces = split_text(text)
        found = None
        for start, end, word in zip(
            pieces.starts.tolist(), pieces.ends.tolist(), pieces.words.tolist(), strict=True
        ):
            piece = text[start:end]
            exact = _token_id(piece)
            masked = _NUMBER if piece[0].isdigit() else exact
            verdicts = self._monitor.push_batch([exact, masked])
            self.tokens += 1
            self._words.append(word)
            if self.keep_text:
                self.ends.append(offset + end)
            if found is None and self.detection is None:
                found = self._check(verdicts)
        if found is not None:
            self.detection = found
        return found

    def _check(self, verdicts: list[LoopVerdict | None]) -> Detection | None:
        for stream, verdict in enumerate(verdicts):
            if verdict is not None and stream not in self._pending:
                self._pending.append(stream)
        for stream in sorted(self._pending):
            current = self._monitor.current(stream)
            if current is None or current.onset is None:
                self._pending.remove(stream)  # the run broke before its content rule was met
                continue
            if self._qualifies(stream, current):
                return self._detection(_STREAMS[stream], current)
        return None

    def _qualifies(self, stream: int, verdict: LoopVerdict) -> bool:
        assert verdict.period is not None and verdict.repeats is not None
        words = sum(list(self._words)[-verdict.period :])
        config = self.config
        if stream == 0:
            return words > 0 or verdict.repeats >= config.wordless_min_repeats
        return words >= config.near_min_words or verdict.repeats >= config.near_counter_repeats

    def _detection(self, kind: str, verdict: LoopVerdict) -> Detection:
        assert verdict.onset is not None and verdict.period is not None
        assert verdict.repeats is not None
        onset = self._origin + verdict.onset
        first_copy_end = onset + verdict.period - 1
        keep = None
        if self.keep_text and first_copy_end >= self.first_token:
            keep = self.end_of_token(first_copy_end)
        return Detection(kind, onset, verdict.period, verdict.repeats, keep)

"""`PartWatcher`: online loop detection on one streamed text (one choice's content or reasoning).

One judge: `loopfix.detect.detect_text`. The watcher never decides a loop by rules of its own; it
asks `detect_text`, and only a loop verdict of it makes a `Detection`:

- mid-stream, on the text so far (up to its last complete token) with `cut=False`: the text is
  judged as if the stream had ended there by itself, the strictest reading (`detect_text` is
  monotone in `cut`: a loop with `cut=False` is a loop with `cut=None` and `cut=True` too). The
  proxy cannot know mid-stream whether the output will run to the cap (it counts detector tokens,
  not the model's, and `max_tokens` may be absent), so the relaxed at-the-cap rules and the weak
  semantic and stagnation tiers wait for the finish;
- at the part's end (`finish(cut)`), on the whole part with the caller's `cut`
  (`finish_reason == "length"`; False when the part ended by itself; None when unknown). That
  verdict is `verdict`, and it is exactly what `detect_text(text, cut=cut)` says of the text.

The judge is asked when a cheap trigger fires (it is never asked per token):
1. `LoopMonitor` on two token streams: the tokens themselves (verbatim) and the tokens with every
   number masked (near: "Step 7: check again." repeating with a counter). A hit whose unit fails
   `detect_text`'s content rules (a wordless unit under `wordless_min_repeats` copies, a near unit
   under `near_min_words` words and `near_counter_repeats` copies) is kept pending and re-checked
   on every token until it qualifies or its run breaks; these rules only save judge calls;
2. every `CHECK_EVERY` tokens, `detect_text` (`cut=False`) over the last `WINDOW_TOKENS` tokens:
   floods, n-gram loops and segment cycles that the monitor cannot see.
A trigger makes a judge call on the whole text so far. A judge call that finds no loop defers the
next one by `max(CHECK_EVERY, tokens // 8)` tokens, so the judge's cost stays amortised linear
even on a stream that keeps triggering without looping (a count-down, a requested list).

Cost per token is flat in the stream's length: the monitor's O(max_period) step plus the window
check (about 10 ms per 2,048-token window on one core, so about 0.15 ms per token; docs/serve.md).

Text arrives in arbitrary deltas. The watcher cuts it into the detector's built-in tokens
(`loopfix.detect.split_text`: words, numbers, punctuation runs, newlines) as soon as a token is
complete (it is followed by whitespace: a token never spans whitespace), so its token positions
are those of `detect_text` on the whole part.

Memory: the whole part (the judge at the finish reads it all), the monitor's O(max_period)
window, the word flags and ends of the last tokens, and, only when `keep_text` is set, the text
and token ends the caller releases from (a rescue must resend the text; a holdback must find
where its tokens end). `forget` drops that caller text when it is no longer needed.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass

from loopfix.detect import DetectConfig, LoopMonitor, LoopVerdict, detect_text, split_text

_TRAILING_WORD = re.compile(r"\S*\Z")
# A delta without whitespace for this long is tokenized anyway, so the carried text stays bounded
# (CJK text has no spaces; its characters are tokens of their own).
_MAX_CARRY = 256
_ID_MASK = 0x7FFFFFFF
_NUMBER = 1  # every number token of the masked stream; hashed tokens are forced even (below)
_STREAMS = ("verbatim", "near")
# The tail window of the periodic check: it holds a loop of the longest period (max_period 512)
# three times over, and the n-gram metric's 20 occurrences of a 30-token n-gram.
WINDOW_TOKENS = 2048
# Tokens between two window checks: the default holdback (64 tokens), so a loop only the window
# sees is found before much more of it has passed the holdback.
CHECK_EVERY = 64
_BLOCK = 8192  # characters per block of the part's kept text


@dataclass(frozen=True)
class Detection:
    """A loop found in one part: `onset` and `period` in the part's tokens (counted from its
    start), and `keep` the character offset just after the first copy of the unit (the text
    before the loop's repeat), when the watcher keeps text. `verdict` is `detect_text`'s verdict
    that decided it (on the text so far, or on the whole part at its finish)."""

    kind: str
    onset: int
    period: int
    repeats: int
    keep: int | None
    verdict: LoopVerdict | None = None


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
        self._monitor = LoopMonitor(config, n_streams=len(_STREAMS))
        self._words: deque[bool] = deque(maxlen=config.max_period)
        self._pending: list[int] = []  # monitor streams with a hit that awaits its content rule
        self.detection: Detection | None = None
        self.verdict: LoopVerdict | None = None  # detect_text on the whole part, at its finish
        # The whole part, for the judge: sealed blocks (and their offsets) plus recent deltas.
        self._blocks: list[str] = []
        self._block_starts: list[int] = []
        self._recent: list[str] = []
        self._recent_start = 0
        self._tail_ends: deque[int] = deque()  # end offsets of the last WINDOW_TOKENS tokens
        self._window_start = 0  # character offset where the window's text starts
        self._next_check = CHECK_EVERY  # token count of the next window check
        self._judge_from = 0  # no judge call on the text so far before this many tokens
        self.judge_calls = 0  # judge calls on the text so far (tests, cost)

    @property
    def length(self) -> int:
        """Characters of the part seen so far."""
        return self._length

    def feed(self, delta: str) -> Detection | None:
        """Add streamed text; a Detection when a loop first qualifies."""
        self._length += len(delta)
        if self.keep_text:
            self.text += delta
        if delta:
            self._recent.append(delta)
            if len(self._recent) >= 64:
                self._seal()
        text = self._carry + delta
        trailing = _TRAILING_WORD.search(text)
        split = trailing.start() if trailing is not None else len(text)
        if len(text) - split > _MAX_CARRY:
            split = len(text)
        self._carry = text[split:]
        return self._tokens(text[:split], self._length - len(text))

    def finish(self, cut: bool | None = None) -> Detection | None:
        """The part ended: the carried word is complete, and the part's verdict is
        `detect_text(whole part, cut=cut)` (kept in `verdict`). `cut`: the part ran to the
        token limit (finish_reason "length"); False when it ended by itself, None when unknown.
        A Detection when that verdict is a loop and none was reported mid-stream."""
        text, self._carry = self._carry, ""
        found = self._tokens(text, self._length - len(text))
        self.verdict = detect_text(self._slice(0, self._length), config=self.config, cut=cut)
        if found is None and self.detection is None and self.verdict.looping:
            found = self.detection = self._detection(self.verdict)
        return found

    def whole_text(self) -> str:
        """The whole part as the judge reads it (after a rewind: the kept text and what came
        after it)."""
        return self._slice(0, self._length)

    def rewind(self, keep: int) -> None:
        """Continue from character `keep` (a rescue): later text and tokens are forgotten and the
        monitor starts afresh, so only new text can make the next loop."""
        assert self.keep_text and keep >= self.start
        count = sum(1 for end in self.ends if end <= keep)
        self.tokens = self.first_token + count
        del self.ends[count:]
        self.text = self.text[: keep - self.start]
        self._truncate(keep)
        self._length = keep
        self._carry = ""
        while self._tail_ends and self._tail_ends[-1] > keep:
            self._tail_ends.pop()
        self._window_start = min(self._window_start, keep)
        self._next_check = self.tokens + CHECK_EVERY
        self._judge_from = 0
        self.verdict = None
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
            if len(self._tail_ends) == WINDOW_TOKENS:
                self._window_start = self._tail_ends.popleft()
            self._tail_ends.append(offset + end)
            if found is None and self.detection is None:
                found = self._check(verdicts, offset + end)
        if found is not None:
            self.detection = found
        return found

    def _check(self, verdicts: list[LoopVerdict | None], end: int) -> Detection | None:
        """The triggers after a token that ends at character `end`, and the judge if one fired."""
        triggered = False
        for stream, verdict in enumerate(verdicts):
            if verdict is not None and stream not in self._pending:
                self._pending.append(stream)
        for stream in sorted(self._pending):
            current = self._monitor.current(stream)
            if current is None or current.onset is None:
                self._pending.remove(stream)  # the run broke before its content rule was met
            elif self._qualifies(stream, current):
                self._pending.remove(stream)  # the monitor stays silent while this run goes on
                triggered = True
        whole = self._window_start == 0  # the window holds the whole text so far
        if self.tokens >= self._next_check:
            self._next_check = self.tokens + CHECK_EVERY
            window = detect_text(
                self._slice(self._window_start, end), config=self.config, cut=False
            )
            if window.looping and whole:
                return self._detection(window)  # the window is the text so far: judged
            triggered = triggered or window.looping
        if not triggered or self.tokens < self._judge_from:
            return None
        self.judge_calls += 1
        verdict = detect_text(self._slice(0, end), config=self.config, cut=False)
        if verdict.looping:
            return self._detection(verdict)
        self._judge_from = self.tokens + max(CHECK_EVERY, self.tokens // 8)
        return None

    def _qualifies(self, stream: int, verdict: LoopVerdict) -> bool:
        assert verdict.period is not None and verdict.repeats is not None
        words = sum(list(self._words)[-verdict.period :])
        config = self.config
        if stream == 0:
            return words > 0 or verdict.repeats >= config.wordless_min_repeats
        return words >= config.near_min_words or verdict.repeats >= config.near_counter_repeats

    def _detection(self, verdict: LoopVerdict) -> Detection:
        """A Detection from a loop verdict of `detect_text` on text starting at the part's start
        (its token positions are the watcher's)."""
        assert verdict.onset is not None and verdict.period is not None
        repeats = verdict.repeats if verdict.repeats is not None else 0
        onset = min(verdict.onset, max(self.tokens - 1, 0))
        period = max(1, min(verdict.period, self.tokens - onset))
        first_copy_end = onset + period - 1
        keep = None
        if self.keep_text and self.first_token <= first_copy_end < self.tokens:
            keep = self.end_of_token(first_copy_end)
        kind = verdict.kind or "verbatim"
        return Detection(kind, onset, period, repeats, keep, verdict)

    # --- the whole part, for the judge --------------------------------------------------------
    def _seal(self) -> None:
        """Join the recent deltas into a block; a small last block takes them in (blocks of
        about `_BLOCK` characters: few objects, bounded copying)."""
        if not self._recent:
            return
        joined = "".join(self._recent)
        if self._blocks and len(self._blocks[-1]) < _BLOCK:
            self._blocks[-1] += joined
        else:
            self._blocks.append(joined)
            self._block_starts.append(self._recent_start)
        self._recent = []
        self._recent_start = self._length

    def _slice(self, start: int, end: int) -> str:
        """Characters `[start, end)` of the part; the work is proportional to the slice."""
        self._seal()
        if start >= end or not self._blocks:
            return ""
        first = bisect_right(self._block_starts, start) - 1
        last = bisect_right(self._block_starts, end - 1)
        joined = "".join(self._blocks[first:last])
        offset = self._block_starts[first]
        return joined[start - offset : end - offset]

    def _truncate(self, keep: int) -> None:
        """Forget the part's characters from `keep` on."""
        self._seal()
        count = bisect_right(self._block_starts, keep - 1) if keep > 0 else 0
        del self._blocks[count:]
        del self._block_starts[count:]
        if self._blocks:
            self._blocks[-1] = self._blocks[-1][: keep - self._block_starts[-1]]
        self._recent_start = keep

"""`LoopMonitor`: online periodic-tail detection over one or many token streams.

Per stream the monitor keeps the last P = max_period tokens and, for every period p <= P, the
step of the last mismatch t[i] != t[i - p]; the run r_p of periodic.py is the distance from that
step to now. A new token x is compared with the tokens 1..P steps back in one vectorised
operation, and every period whose comparison fails records the current step. That is O(P) work
per token (a fixed constant: independent of how long the stream is), done as a handful of numpy
operations over a (streams, P) array so that many streams share the Python overhead. Memory is
O(streams * P). Onset, period and repeats follow from the runs alone, so the monitor never needs
the stream's history beyond P tokens.

Reporting: `push` returns a verdict the first time the tail qualifies and then stays silent while
that loop goes on (the run of the reported period keeps growing); once that run breaks, the next
loop is reported again. `current()` gives the tail verdict at any time, and equals
`find_periodic_tail` on the tokens pushed so far.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .config import DetectConfig
from .periodic import run_thresholds, tail_verdict
from .verdict import LoopVerdict

# History slots hold -1 before a stream has that many tokens; real tokens are >= 0, so an empty
# slot never matches. Token ids are stored as int32 (half the memory traffic of int64).
_EMPTY = -1
_MAX_TOKEN = np.iinfo(np.int32).max


class LoopMonitor:
    """Online loop detector; one instance watches `n_streams` token streams in lockstep.

    `push(token)` feeds a single stream; `push_batch(tokens)` feeds one token to each stream
    (shape `(n_streams,)`) or several steps at once (shape `(n_streams, steps)`). When
    `n_streams` is not given, the first `push_batch` sets it. Tokens are non-negative ints.
    """

    def __init__(self, config: DetectConfig | None = None, *, n_streams: int | None = None):
        self.config = config or DetectConfig()
        self._window = self.config.max_period
        # Column j of the history window and of the mismatch steps holds lag P - j.
        self._thresholds = run_thresholds(self.config, np.arange(self._window, 0, -1))
        self._streams = 0
        if n_streams is not None:
            self._allocate(n_streams)

    def _allocate(self, n_streams: int) -> None:
        if n_streams < 1:
            raise ValueError("n_streams must be positive")
        window = self._window
        self._streams = n_streams
        # Each token is written twice, P apart, so the last P tokens are always one contiguous
        # slice `history[:, head : head + P]` (no gather, no roll).
        self._history = np.full((n_streams, 2 * window), _EMPTY, dtype=np.int32)
        self._mismatch = np.full((n_streams, window), -1, dtype=np.int64)
        self._differs = np.zeros((n_streams, window), dtype=bool)
        self._hits = np.zeros((n_streams, window), dtype=bool)
        self._starts = np.zeros(n_streams, dtype=np.int64)  # step of each stream's first token
        self._reported = np.full(n_streams, -1, dtype=np.int64)  # column of the reported loop
        self._set_active()  # streams with a reported loop still going on, and their count
        self._head = 0
        self._step = 0  # steps pushed to all streams together

    @property
    def n_streams(self) -> int:
        return self._streams

    @property
    def lengths(self) -> np.ndarray:
        """Tokens pushed to each stream since its last reset."""
        return self._step - self._starts if self._streams else np.zeros(0, dtype=np.int64)

    def reset(self, stream: int | None = None) -> None:
        """Forget one stream (or all of them) and start it afresh."""
        if not self._streams:
            return
        rows = slice(None) if stream is None else stream
        self._history[rows] = _EMPTY
        self._mismatch[rows] = self._step - 1
        self._starts[rows] = self._step
        self._reported[rows] = -1
        self._set_active()

    def push(self, token: int) -> LoopVerdict | None:
        """Feed the next token of a single-stream monitor; a verdict when a loop is first seen."""
        if not self._streams:
            self._allocate(1)
        if self._streams != 1:
            raise ValueError(f"push() feeds one stream; this monitor has {self._streams}")
        if not 0 <= token <= _MAX_TOKEN:
            raise ValueError("tokens must be non-negative integers below 2**31")
        return self._advance(np.array([token], dtype=np.int32))[0]

    def push_batch(
        self, tokens: Sequence[int] | Sequence[Sequence[int]] | np.ndarray
    ) -> list[LoopVerdict | None]:
        """Feed one token per stream (or a `(n_streams, steps)` block); per stream, the verdict
        of a loop first seen during this call, else None."""
        block = np.asarray(tokens, dtype=np.int64)
        if block.ndim not in (1, 2):
            raise ValueError(
                f"expected shape (n_streams,) or (n_streams, steps), got {block.shape}"
            )
        if not self._streams:
            self._allocate(block.shape[0])
        if block.shape[0] != self._streams:
            raise ValueError(f"expected {self._streams} streams, got {block.shape[0]}")
        if block.size and (block.min() < 0 or block.max() > _MAX_TOKEN):
            raise ValueError("tokens must be non-negative integers below 2**31")
        block = block.astype(np.int32)
        if block.ndim == 1:
            return self._advance(block)
        verdicts: list[LoopVerdict | None] = [None] * self._streams
        for column in block.T:
            for stream, verdict in enumerate(self._advance(np.ascontiguousarray(column))):
                if verdict is not None and verdicts[stream] is None:
                    verdicts[stream] = verdict
        return verdicts

    def current(self, stream: int = 0) -> LoopVerdict | None:
        """The periodic-tail verdict for the tokens pushed so far (None: the tail is no loop)."""
        if not self._streams:
            return None
        runs = self._step - 1 - self._mismatch[stream]
        columns = np.flatnonzero(runs >= self._thresholds)
        return self._verdict(stream, int(columns[-1])) if columns.size else None

    def _verdict(self, stream: int, column: int) -> LoopVerdict:
        run = self._step - 1 - int(self._mismatch[stream, column])
        end = self._step - int(self._starts[stream])
        return tail_verdict(end, self._window - column, run)

    def _advance(self, tokens: np.ndarray) -> list[LoopVerdict | None]:
        window, head, step = self._window, self._head, self._step
        np.not_equal(self._history[:, head : head + window], tokens[:, None], out=self._differs)
        np.copyto(self._mismatch, step, where=self._differs)
        self._history[:, head] = tokens
        self._history[:, head + window] = tokens
        self._head = (head + 1) % window
        self._step = step + 1

        verdicts: list[LoopVerdict | None] = [None] * self._streams
        if self._reporting:
            active = self._active
            broken = self._mismatch[active, self._reported[active]] == step
            if broken.any():
                self._reported[active[broken]] = -1
                self._set_active()
            if self._reporting == self._streams:
                return verdicts  # every stream is inside a reported loop: nothing new to say
        # run_p = step - mismatch_p reaches its threshold when mismatch_p <= step - threshold_p.
        np.less_equal(self._mismatch, step - self._thresholds, out=self._hits)
        if not self._hits.any():  # the common case: no stream's tail is a loop
            return verdicts
        fresh = np.flatnonzero(self._hits.any(axis=1) & (self._reported < 0))
        for stream in fresh.tolist():
            # The last hit column is the smallest period: the loop's primitive unit.
            column = int(np.flatnonzero(self._hits[stream])[-1])
            self._reported[stream] = column
            verdicts[stream] = self._verdict(stream, column)
        if fresh.size:
            self._set_active()
        return verdicts

    def _set_active(self) -> None:
        self._active = np.flatnonzero(self._reported >= 0)
        self._reporting = len(self._active)

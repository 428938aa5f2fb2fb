"""`TimedBackend`: any backend, counting generated tokens and generation time (tokens/s).

Only the time spent inside the wrapped backend's generator counts: storing and judging
samples between yields is the caller's time, not the guard's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from loopfix.backends.base import Backend, ClosedOnExit, Generation, Request
from loopfix.backends.identity import ModelFile, ModelIdentity
from loopfix.records import DecodeSettings

__all__ = ["TimedBackend"]


class TimedBackend(ClosedOnExit):
    """A `Backend` that delegates to `inner` and adds up `tokens` and `seconds`."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name, self.batch_size = inner.name, inner.batch_size
        self.tokenizer: Any = inner.tokenizer
        self.context_length = inner.context_length
        self.dtype = inner.dtype
        self.generation_cap = inner.generation_cap
        self.tokens, self.seconds = 0, 0.0

    def identity(self, known: Mapping[str, ModelFile] | None = None) -> ModelIdentity:
        return self.inner.identity(known)

    def generate(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        start = time.perf_counter()
        for index, generation in self.inner.generate(requests, settings):
            self.seconds += time.perf_counter() - start
            self.tokens += len(generation.tokens)
            yield index, generation
            start = time.perf_counter()

    def close(self) -> None:
        self.inner.close()

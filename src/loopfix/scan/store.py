"""Appending a run's records without their being torn by Ctrl-C (other files: `loopfix.atomic`)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from loopfix.records import Sample, SampleStore

__all__ = ["append_uninterrupted", "deferred_interrupt"]


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold a Ctrl-C until the block ends, then raise it: a batch is stored whole or not at all.
    (kill -9 cannot be held; the store cuts a torn last line on reopen.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[object] = []
    previous = signal.signal(signal.SIGINT, lambda *args: received.append(args))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            raise KeyboardInterrupt


def append_uninterrupted(store: SampleStore, samples: list[Sample]) -> None:
    if samples:
        with deferred_interrupt():
            store.append(samples)

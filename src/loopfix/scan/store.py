"""Writing a run's files: records appended without being torn by Ctrl-C, JSON next to them."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from loopfix.records import Sample, SampleStore

__all__ = ["append_uninterrupted", "deferred_interrupt", "write_json"]


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


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (temp file + rename), so a reader never sees half a summary."""
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)

"""Stage timings and peak memory, printed as each stage ends."""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["StageClock", "peak_rss_mib"]


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (MiB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB else


class StageClock:
    def __init__(self, report: Callable[[str], None] = print) -> None:
        self.seconds: dict[str, float] = {}
        self.report = report

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self.seconds[name] = round(time.perf_counter() - started, 2)
        self.report(f"[{name}] {self.seconds[name]:.1f} s, peak memory {peak_rss_mib():.0f} MiB")

    def to_dict(self) -> dict[str, object]:
        return {
            "seconds": self.seconds,
            "total_seconds": round(sum(self.seconds.values()), 2),
            "peak_rss_mib": round(peak_rss_mib(), 1),
        }

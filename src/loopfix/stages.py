"""Stage timings and peak memory, printed as each stage ends.

A stage's peak is its own: on Linux the process's high-water mark (VmHWM) is reset when the
stage starts (`/proc/self/clear_refs`), and a stage that contains others (the doctor's repair
around the repair's stages) takes the largest peak seen inside it. Elsewhere the peak is the
process's since it started. A stage that runs its work in a child process (the doctor's measure
on vLLM) hands the child's peak to `note_peak`, so the stage's peak is the larger of the two.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["StageClock", "note_peak", "peak_rss_mib"]

_STATUS, _CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")
_open_peaks: list[float] = []  # the largest peak read so far inside each open stage


def peak_rss_mib() -> float:
    """Peak resident memory of this process since the last reset (MiB)."""
    if _STATUS.is_file():
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB else


def note_peak(mib: float) -> None:
    """Count `mib` (a child process's peak, say) in the peak of every open stage."""
    if _open_peaks:
        _open_peaks[-1] = max(_open_peaks[-1], mib)


def _reset_peak() -> None:
    try:
        _CLEAR_REFS.write_text("5")  # "5": reset the peak RSS to the current RSS
    except OSError:
        pass  # not Linux, or not allowed: the peak stays the process's


class StageClock:
    def __init__(self, report: Callable[[str], None] = print) -> None:
        self.seconds: dict[str, float] = {}
        self.peak_mib: dict[str, float] = {}
        self.report = report

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        _reset_peak()
        _open_peaks.append(0.0)
        try:
            yield
        finally:
            inner = _open_peaks.pop()
            peak = max(inner, peak_rss_mib())
            if _open_peaks:
                _open_peaks[-1] = max(_open_peaks[-1], peak)
        self.seconds[name] = round(time.perf_counter() - started, 2)
        self.peak_mib[name] = round(peak, 1)
        self.report(f"[{name}] {self.seconds[name]:.1f} s, peak memory {peak:.0f} MiB")

    def to_dict(self) -> dict[str, object]:
        return {
            "seconds": self.seconds,
            "total_seconds": round(sum(self.seconds.values()), 2),
            "peak_rss_mib": self.peak_mib,
        }

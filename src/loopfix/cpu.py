"""What this CPU can do, read once from /proc/cpuinfo (Linux; elsewhere: nothing known)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["cpu_flags", "native_bf16"]


@cache
def cpu_flags() -> frozenset[str]:
    """The feature flags of the first CPU listed; empty where /proc/cpuinfo cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    line = next((line for line in text.splitlines() if line.startswith("flags")), "flags:")
    return frozenset(line.split(":", 1)[1].split())


def native_bf16() -> bool:
    """Whether the CPU multiplies bfloat16 in hardware (without it bfloat16 is emulated and
    several times slower than float32)."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags())

"""Small exact statistics: Wilson score intervals and the exact McNemar test."""

from __future__ import annotations

import math

__all__ = ["mcnemar_exact", "wilson_interval"]

_Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = _Z95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion (95% by default); None when n == 0."""
    if n == 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(rescues: int, regressions: int) -> float:
    """Two-sided exact McNemar p-value: the discordant pairs against Binomial(b + c, 1/2)."""
    discordant = rescues + regressions
    if discordant == 0:
        return 1.0
    smaller = min(rescues, regressions)
    tail = sum(math.comb(discordant, i) for i in range(smaller + 1)) / 2**discordant
    return min(1.0, 2 * tail)

"""Small exact statistics: Wilson score intervals, the exact McNemar test, Student-t quantiles,
intervals over a few repeated measurements and the paired t-test (written here so that the
runtime install needs no scipy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MeanInterval",
    "PairedTest",
    "mcnemar_exact",
    "mean_interval",
    "paired_t_test",
    "student_t_quantile",
    "student_t_two_sided_p",
    "wilson_interval",
]

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


def _incomplete_beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz),
    which converges fast for x < (a + 1) / (a + b + 2)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return fraction


def _regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _incomplete_beta_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _incomplete_beta_fraction(b, a, 1 - x) / b


def _student_t_cdf(t: float, df: int) -> float:
    tail = 0.5 * _regularized_beta(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t >= 0 else tail


def student_t_quantile(probability: float, df: int) -> float:
    """The Student-t quantile: the t with P(T <= t) = probability for `df` degrees of freedom
    (bisection on the CDF to 1e-12; scipy.stats.t.ppf to 10 digits)."""
    if not 0 < probability < 1 or df < 1:
        raise ValueError(f"need 0 < probability < 1 and df >= 1, got {probability}, {df}")
    low, high = -1.0, 1.0
    while _student_t_cdf(low, df) > probability:
        low *= 2
    while _student_t_cdf(high, df) < probability:
        high *= 2
    while high - low > 1e-12 * max(1.0, abs(high)):
        middle = (low + high) / 2
        if _student_t_cdf(middle, df) < probability:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def student_t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom."""
    if df < 1:
        raise ValueError(f"need df >= 1, got {df}")
    return min(1.0, 2 * _student_t_cdf(-abs(t), df))


@dataclass(frozen=True)
class MeanInterval:
    """The mean of a few measurements (one per training seed) and its 95% Student-t interval,
    mean +- t(0.975, n-1) * sd / sqrt(n); no interval from a single measurement."""

    mean: float
    low: float | None
    high: float | None
    n: int


def _standard_error(values: Sequence[float], mean: float) -> float:
    """The sample standard deviation (n - 1) over sqrt(n)."""
    n = len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1) / n)


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> MeanInterval:
    n = len(values)
    if n == 0:
        raise ValueError("need at least one value")
    mean = math.fsum(values) / n
    if n == 1:
        return MeanInterval(mean, None, None, 1)
    half = student_t_quantile(0.5 + confidence / 2, n - 1) * _standard_error(values, mean)
    return MeanInterval(mean, mean - half, mean + half, n)


@dataclass(frozen=True)
class PairedTest:
    """variant - baseline over paired measurements (the same training seed): the mean difference
    with its 95% Student-t interval, and the two-sided paired t-test's p (None when it is
    undefined: fewer than 2 pairs; 1.0 or 0.0 when every difference is equal)."""

    difference: MeanInterval
    p: float | None


def paired_t_test(variant: Sequence[float], baseline: Sequence[float]) -> PairedTest:
    if len(variant) != len(baseline):
        raise ValueError(f"need paired values, got {len(variant)} and {len(baseline)}")
    differences = [v - b for v, b in zip(variant, baseline, strict=True)]
    difference = mean_interval(differences)
    if difference.n < 2:
        return PairedTest(difference, None)
    error = _standard_error(differences, difference.mean)
    if error == 0:  # identical differences: no doubt about the sign, or no difference at all
        return PairedTest(difference, 1.0 if difference.mean == 0 else 0.0)
    t = difference.mean / error
    return PairedTest(difference, student_t_two_sided_p(t, difference.n - 1))

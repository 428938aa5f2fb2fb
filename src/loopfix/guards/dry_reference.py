"""llama.cpp's DRY, recomputed from the whole context every step (`llama_sampler_dry_apply`).

A faithful Python port of the reference algorithm, kept as the oracle the incremental guard is
tested against and as the baseline of the benchmark; the finite-window DRY also uses it.

Steps (llama.cpp numbering):
1. The repeat limit: tokens after the last sequence breaker (a suffix may not span a breaker).
2. A Z-algorithm pass over the reversed window: for each earlier end position, the length of
   the common suffix with the whole context, capped at the limit. O(window) per token.
3. For each earlier match of at least `allowed_length`, the token that followed it would extend
   the repeat: keep the longest match per such token.
4. `dry_penalties`: logit -= multiplier * base ** (length - allowed_length), with the exponent
   clamped so the power stays a finite float; single-token breakers are never penalised.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

__all__ = ["FLOAT_MAX_LOG", "dry_penalties", "dry_repeat_lengths", "max_exponent"]

FLOAT_MAX_LOG = 88.7228391  # log(FLT_MAX), as in llama.cpp


def max_exponent(base: float) -> int:
    """The exponent clamp llama.cpp uses (0 = no clamp, for base <= 1)."""
    return int(FLOAT_MAX_LOG / math.log(base)) if base > 1.000001 else 0


def _repeat_limit(tokens: Sequence[int], window: int, breakers: Collection[int]) -> int:
    end = len(tokens) - 1
    for back in range(window):
        if tokens[end - back] in breakers:
            return back
    return window


def _z_suffix_matches(tokens: Sequence[int], window: int, limit: int) -> list[int]:
    """counts[window - 1 - k]: common suffix length of the context and the context minus its
    last k tokens (k = 1 .. window - 1), capped at `limit` (llama.cpp step 2)."""
    end = len(tokens) - 1

    def rat(back: int) -> int:
        return tokens[end - back]

    counts = [0] * window
    last = window - 1
    left = right = 0
    for k in range(1, window):
        if k > right:
            n = 0
            while n + k < window and rat(n) == rat(n + k):
                n += 1
            counts[last - k] = min(n, limit)
            if n > 0:
                left, right = k, k + n - 1
        else:
            inside = k - left
            right_part = right - k + 1
            if counts[last - inside] < right_part:
                counts[last - k] = min(counts[last - inside], limit)
            else:
                i = right + 1
                while i < window and rat(i) == rat(i - k):
                    i += 1
                counts[last - k] = min(i - k, limit)
                left, right = k, i - 1
    return counts


def dry_repeat_lengths(
    tokens: Sequence[int],
    allowed_length: int,
    breakers: Collection[int],
    window: int | None = None,
) -> dict[int, int]:
    """token -> the repeat length it would extend (only lengths >= allowed_length)."""
    size = len(tokens) if window is None else min(len(tokens), window)
    if size <= allowed_length:
        return {}
    limit = _repeat_limit(tokens, size, breakers)
    if limit < allowed_length:
        return {}
    counts = _z_suffix_matches(tokens, size, limit)
    end = len(tokens) - 1
    longest: dict[int, int] = {}
    for index in range(size - 1):
        length = counts[index]
        if length >= allowed_length:
            token = tokens[end - (size - 2 - index)]
            if longest.get(token, -1) < length:
                longest[token] = length
    return longest


def dry_penalties(
    lengths: dict[int, int],
    multiplier: float,
    base: float,
    allowed_length: int,
    breakers: Collection[int],
) -> dict[int, float]:
    """token -> amount to subtract from its logit (llama.cpp step 4)."""
    clamp = max_exponent(base)
    penalties = {}
    for token, length in lengths.items():
        if token in breakers:
            continue
        exponent = length - allowed_length
        if clamp > 0 and exponent > clamp:
            exponent = clamp
        penalties[token] = multiplier * base**exponent
    return penalties

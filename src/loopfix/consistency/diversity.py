"""Diversity of several outputs of one prompt: distinct-n and normalised edit distance."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

__all__ = ["distinct_n", "edit_distance", "mean_pairwise_distance"]


def distinct_n(outputs: Sequence[Sequence[int]], n: int) -> float | None:
    """Distinct n-grams over all n-grams of the outputs together (None: no n-gram at all)."""
    grams = [tuple(o[i : i + n]) for o in outputs for i in range(len(o) - n + 1)]
    return len(set(grams)) / len(grams) if grams else None


def edit_distance(a: Sequence[int], b: Sequence[int]) -> float:
    """Levenshtein distance over tokens divided by the longer length (0: equal, 1: disjoint)."""
    if not a and not b:
        return 0.0
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1] / max(len(a), len(b))


def mean_pairwise_distance(outputs: Sequence[Sequence[int]]) -> float:
    pairs = list(combinations(outputs, 2))
    return sum(edit_distance(a, b) for a, b in pairs) / len(pairs)

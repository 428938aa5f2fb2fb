"""The paper's loop metric: some n-gram occurs at least k times (Pipis et al., arXiv 2512.12895).

Every window of n tokens gets a 64-bit polynomial hash in a few vectorised passes (a rolling
hash expressed as prefix sums, all modulo 2**64). Windows are first counted in a hash table of
~4L buckets (`np.bincount`, O(L)); when no bucket reaches k, which is the common case on a
non-looping response, that is the answer. Otherwise only the windows in heavy buckets are grouped
by full hash, and each candidate group is confirmed by comparing the actual tokens, so a hash
collision can delay but never fake a loop.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .ids import as_ids

# Odd multipliers (invertible modulo 2**64): one to spread token ids over 64 bits, one as the base.
_MIX = np.uint64(0x9E3779B97F4A7C15)
_BASE = 0xD6E8FEB86659FD93
_BASE_INVERSE = pow(_BASE, -1, 2**64)


@dataclass(frozen=True)
class NgramLoop:
    """An n-gram that occurs at least k times.

    `position` is the start of its k-th occurrence (where the count reaches k), `first_position`
    the start of its first occurrence, `count` its occurrences in the whole sequence (overlaps
    allowed). The metric fires once `end = position + n` tokens have been generated.
    """

    position: int
    first_position: int
    count: int
    n: int

    @property
    def end(self) -> int:
        return self.position + self.n


def _powers(base: int, length: int) -> np.ndarray:
    powers = np.full(length, base, dtype=np.uint64)
    powers[0] = 1
    return np.cumprod(powers, dtype=np.uint64)


def window_hashes(ids: np.ndarray, n: int) -> np.ndarray:
    """64-bit hash of every window `ids[i:i+n]`, i = 0..len-n (equal windows hash equal)."""
    length = len(ids)
    mixed = (ids.astype(np.uint64) + np.uint64(1)) * _MIX
    mixed ^= mixed >> np.uint64(29)
    prefix = np.zeros(length + 1, dtype=np.uint64)
    np.cumsum(mixed * _powers(_BASE, length), dtype=np.uint64, out=prefix[1:])
    # sum_j x[i+j] B^(i+j), shifted down by B^-i so that equal windows get equal hashes.
    return (prefix[n:] - prefix[:-n]) * _powers(_BASE_INVERSE, length - n + 1)


def _kth_in_group(ids: np.ndarray, n: int, members: np.ndarray, k: int) -> NgramLoop | None:
    """The earliest n-gram among `members` (window starts, ascending) that truly occurs k times."""
    windows = sliding_window_view(ids, n)[members]
    if (windows == windows[0]).all():
        return NgramLoop(int(members[k - 1]), int(members[0]), len(members), n)
    # A hash collision: split the group by the tokens themselves.
    groups: dict[bytes, list[int]] = {}
    for start, window in zip(members.tolist(), windows, strict=True):
        groups.setdefault(window.tobytes(), []).append(start)
    found = [starts for starts in groups.values() if len(starts) >= k]
    if not found:
        return None
    starts = min(found, key=lambda group: group[k - 1])
    return NgramLoop(starts[k - 1], starts[0], len(starts), n)


def find_ngram_loop(
    tokens: Sequence[Hashable] | np.ndarray, n: int = 30, k: int = 20
) -> NgramLoop | None:
    """The paper's metric: the n-gram whose count first reaches k, or None if none does.

    Exact: overlapping occurrences count, the whole sequence is searched, and hash matches are
    confirmed on the tokens. O(L) when no n-gram comes close to k.
    """
    if n < 1 or k < 1:
        raise ValueError("n and k must be positive")
    ids = as_ids(tokens)
    if len(ids) < n:
        return None
    hashes = window_hashes(ids, n)
    bits = max(4, int(len(hashes) * 4).bit_length())
    buckets = (hashes >> np.uint64(64 - bits)).astype(np.intp)
    heavy = np.bincount(buckets, minlength=1 << bits) >= k
    candidates = np.flatnonzero(heavy[buckets])
    if candidates.size == 0:
        return None
    # Group candidate windows by full hash; a stable sort keeps each group's starts ascending.
    order = candidates[np.argsort(hashes[candidates], kind="stable")]
    grouped = hashes[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    big = np.flatnonzero(sizes >= k)
    kth = order[starts[big] + k - 1]
    best: NgramLoop | None = None
    # A group's k-th start bounds every true n-gram inside it, so visit groups by that bound.
    for group in big[np.argsort(kth)]:
        if best is not None and order[starts[group] + k - 1] >= best.position:
            break
        members = order[starts[group] : starts[group] + sizes[group]]
        found = _kth_in_group(ids, n, members, k)
        if found is not None and (best is None or found.position < best.position):
            best = found
    return best


def occurrences(ids: np.ndarray, start: int, n: int) -> np.ndarray:
    """Start of every occurrence of the n-gram `ids[start:start+n]` (ascending)."""
    windows = sliding_window_view(ids, n)
    return np.flatnonzero((windows == ids[start : start + n]).all(axis=1))

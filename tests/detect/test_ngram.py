import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopfix.detect import find_ngram_loop
from loopfix.detect.ngram import occurrences, window_hashes


def recount(tokens, n, k):
    """The straightforward definition: count every n-gram, in order, until one reaches k."""
    counts: Counter = Counter()
    first: dict = {}
    for i in range(len(tokens) - n + 1):
        gram = tuple(tokens[i : i + n])
        counts[gram] += 1
        first.setdefault(gram, i)
        if counts[gram] == k:
            total = sum(1 for j in range(len(tokens) - n + 1) if tuple(tokens[j : j + n]) == gram)
            return i, first[gram], total
    return None


@settings(max_examples=150, deadline=None)
@given(
    tokens=st.lists(st.integers(0, 4), max_size=120),
    n=st.integers(1, 6),
    k=st.integers(1, 6),
)
def test_matches_the_definition(tokens, n, k):
    found = find_ngram_loop(tokens, n, k)
    expected = recount(tokens, n, k)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert (found.position, found.first_position, found.count) == expected
        assert found.n == n and found.end == found.position + n


def test_paper_setting_on_a_loop():
    rng = random.Random(0)
    prefix = [rng.randrange(50_000) for _ in range(500)]
    unit = [rng.randrange(50_000) for _ in range(40)]
    found = find_ngram_loop(prefix + unit * 25, n=30, k=20)
    assert found is not None
    assert found.first_position == 500
    assert found.position == 500 + 19 * 40
    assert found.count == 25


def test_iid_tokens_never_reach_the_paper_threshold():
    rng = np.random.default_rng(1)
    assert find_ngram_loop(rng.integers(0, 50_000, 8_000)) is None


def test_a_real_hash_collision_never_makes_a_loop():
    # Thue-Morse and its complement collide under any polynomial hash modulo 2**64 at length
    # 2048; the detector must compare the tokens and see they differ.
    thue_morse = [0]
    while len(thue_morse) < 2048:
        thue_morse += [1 - x for x in thue_morse]
    complement = [1 - x for x in thue_morse]
    tokens = np.array(thue_morse + [7] + complement)
    hashes = window_hashes(tokens, 2048)
    assert hashes[0] == hashes[2049]
    assert find_ngram_loop(tokens, 2048, 2) is None
    assert find_ngram_loop(np.array(thue_morse * 2 + complement), 2048, 2) is not None


def test_string_tokens_and_occurrences():
    words = "a b c a b c a b c x".split()
    found = find_ngram_loop(words, n=3, k=3)
    assert found is not None and (found.position, found.first_position) == (6, 0)
    ids = np.array([1, 2, 1, 2, 1, 3])
    assert occurrences(ids, 0, 2).tolist() == [0, 2]


def test_short_and_invalid_input():
    assert find_ngram_loop([1, 2], n=3, k=1) is None
    with pytest.raises(ValueError):
        find_ngram_loop([1, 2, 3], n=0, k=1)

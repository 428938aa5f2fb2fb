import random

import pytest
import torch

from loopfix.guards import GuardContext, parse_guards
from loopfix.guards.dry_reference import dry_penalties, dry_repeat_lengths, max_exponent
from loopfix.lab.stargraph import TOKEN_ID
from loopfix.lab.tokenizer import build_tokenizer

A, B, C, D, Y = 0, 1, 2, 3, 4


def dry_logits(tokens: list[int], args: dict, vocab: int = 8) -> torch.Tensor:
    chain = parse_guards("dry", {"dry.breaker_ids": [], **args}, GuardContext(vocab))
    chain.add(0, tokens[:1], tokens[1:])
    return chain.apply(torch.zeros(1, vocab))


def test_llama_cpp_worked_example() -> None:
    # llama.cpp's comment: "a b c c b c y a b c". Emitting c would extend "a b c" (3 -> 4),
    # y would extend "b c" (2 -> 3); penalty = 0.8 * 1.75 ** (length - 2).
    result = dry_logits([A, B, C, C, B, C, Y, A, B, C], {})
    expected = torch.zeros(1, 8)
    expected[0, C] = -0.8 * 1.75
    expected[0, Y] = -0.8
    assert torch.allclose(result, expected, rtol=0, atol=1e-6)


def test_a_repeat_does_not_span_a_breaker() -> None:
    loop = [A, B, C, D, A, B, C, D, A, B, C]
    # Without breakers, d extends "a b c d a b c" (7 tokens): 0.8 * 1.75 ** 5.
    assert dry_logits(loop, {})[0, D] == pytest.approx(-0.8 * 1.75**5, rel=1e-6)
    # With `a` a breaker, the repeat may only use "b c", the tokens after the last `a`.
    assert dry_logits(loop, {"dry.breaker_ids": [A]})[0, D] == pytest.approx(-0.8, rel=1e-6)
    # A breaker token itself is never penalised.
    assert dry_logits(loop, {"dry.breaker_ids": [D]})[0, D] == 0.0


def test_short_repeats_and_a_zero_multiplier_change_nothing() -> None:
    assert torch.equal(dry_logits([A, B, A], {}), torch.zeros(1, 8))  # "a" is shorter than 2
    assert torch.equal(dry_logits([A, B, A, B, A, B], {"dry.multiplier": 0.0}), torch.zeros(1, 8))


def test_the_exponent_is_clamped_like_llama_cpp() -> None:
    base = 1000.0
    loop = [A, B] * 40
    clamp = max_exponent(base)  # int(88.72 / log(1000)) = 12
    assert clamp == 12
    result = dry_logits(loop, {"dry.base": base})
    assert result[0, A] == pytest.approx(-0.8 * base**clamp, rel=1e-6)


def test_breakers_map_through_the_tokenizer() -> None:
    tokenizer = build_tokenizer()
    chain = parse_guards("dry", context=GuardContext.from_tokenizer(tokenizer))
    chain.add(0, [TOKEN_ID["?"]])
    assert chain.guards[0].rows[0].state.breakers == frozenset({TOKEN_ID[":"]})


def streams(seed: int, count: int) -> list[tuple[list[int], int, int]]:
    """Random token streams, half with a looping tail, with small vocabularies (many repeats)."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        vocab = rng.choice([2, 3, 5])
        unit = [rng.randrange(vocab) for _ in range(rng.randint(1, 7))]
        tokens: list[int] = []
        while len(tokens) < 150:
            tokens += unit * rng.randint(1, 10) + [rng.randrange(vocab) for _ in range(3)]
        made.append((tokens, vocab, rng.choice([1, 2, 3])))
    return made


@pytest.mark.parametrize("base", [1.75, 1000.0])
def test_incremental_equals_recomputed_at_every_step(base: float) -> None:
    for tokens, vocab, allowed in streams(1, 12):
        breakers = {0} if allowed == 2 else set()
        args = {
            "dry.breaker_ids": sorted(breakers),
            "dry.allowed_length": allowed,
            "dry.base": base,
        }
        chain = parse_guards("dry", args, GuardContext(vocab))
        guard = chain.guards[0]
        chain.add(0, tokens[:1])
        for step in range(1, len(tokens)):
            ours = dry_penalties(guard.repeat_lengths(guard.rows[0]), 0.8, base, allowed, breakers)
            lengths = dry_repeat_lengths(tokens[:step], allowed, breakers)
            assert ours == dry_penalties(lengths, 0.8, base, allowed, breakers), (tokens, step)
            chain.extend(0, [tokens[step]])


def test_a_window_limits_the_search_like_penalty_last_n() -> None:
    tokens = [A, B, C] + [D, Y] * 3 + [A, B]
    # Whole context: c would extend "a b" (2) -> penalised.
    assert dry_logits(tokens, {})[0, C] == pytest.approx(-0.8)
    # The last 8 tokens no longer hold the earlier "a b c".
    assert dry_logits(tokens, {"dry.window": 8})[0, C] == 0.0

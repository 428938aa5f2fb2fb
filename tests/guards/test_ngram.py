import torch
from transformers import NoRepeatNGramLogitsProcessor

from loopfix.guards import GuardContext, parse_guards

INF = float("inf")


def ngram_logits(tokens: list[int], args: dict, vocab: int = 8) -> torch.Tensor:
    chain = parse_guards("ngram", args, GuardContext(vocab))
    chain.add(0, tokens[:2], tokens[2:])
    return chain.apply(torch.zeros(1, vocab))


def test_bans_the_tokens_that_complete_a_seen_ngram() -> None:
    # Trigrams seen after "1 2": "1 2 3" and "1 2 5"; the context ends with "1 2".
    result = ngram_logits([1, 2, 3, 1, 2, 5, 0, 1, 2], {"ngram.size": 3, "ngram.window": None})
    expected = torch.zeros(1, 8)
    expected[0, 3] = expected[0, 5] = -INF
    assert torch.equal(result, expected)


def test_only_ngrams_inside_the_window_count() -> None:
    tokens = [1, 2, 3, 1, 2, 5, 0, 1, 2]
    # The last 6 tokens (1 2 5 0 1 2) hold "1 2 5" but not "1 2 3".
    result = ngram_logits(tokens, {"ngram.size": 3, "ngram.window": 6})
    expected = torch.zeros(1, 8)
    expected[0, 5] = -INF
    assert torch.equal(result, expected)


def test_without_a_window_it_equals_hf_no_repeat_ngram() -> None:
    torch.manual_seed(0)
    ids = torch.randint(0, 6, (1, 60))
    scores = torch.randn(1, 6)
    for size in (1, 2, 3, 4):
        chain = parse_guards("ngram", {"ngram.size": size, "ngram.window": None}, GuardContext(6))
        chain.add(0, ids[0, :10].tolist(), ids[0, 10:].tolist())
        hf = NoRepeatNGramLogitsProcessor(size)(ids, scores.clone())
        assert torch.equal(chain.apply(scores.clone()), hf)

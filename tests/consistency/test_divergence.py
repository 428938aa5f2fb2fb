import pytest
import torch

from loopfix.backends.hf import generate
from loopfix.consistency.divergence import TOP_K, find_divergence, first_difference
from loopfix.models import load_model
from loopfix.records import DecodeSettings


def test_first_difference() -> None:
    assert first_difference([1, 2, 3], [1, 2, 3]) is None
    assert first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert first_difference([1, 2], [1, 2, 3]) == 2  # one ended earlier


def test_divergence_reads_the_reference_distribution_at_the_split() -> None:
    model, tokenizer = load_model("loopfix:stargraph", device="cpu")
    prompt = tokenizer("0>1 1>2 | 0 2 ->")["input_ids"]
    greedy = generate(model, tokenizer, [prompt], DecodeSettings(max_new_tokens=12), 1)[0].tokens
    other = greedy[:4] + [(greedy[4] + 1) % 50] + greedy[5:]
    found = find_divergence(model, tokenizer, "p", prompt, (greedy, other), ("a", "b"), 0.02)
    assert found is not None and found.position == 4
    assert found.token_a is not None and found.token_a.id == greedy[4]
    assert found.token_b is not None and found.token_b.id == other[4]
    assert len(found.top) == TOP_K
    assert found.top[0].id == greedy[4]  # greedy picked the teacher-forced argmax
    probabilities = [t.probability for t in found.top]
    assert probabilities == sorted(probabilities, reverse=True)
    assert found.gap == pytest.approx(probabilities[0] - probabilities[1])
    assert found.near_tie == (found.gap < 0.02)
    with torch.inference_mode():
        logits = model(torch.tensor([prompt + greedy[:4]])).logits[0, -1]
    assert found.top[0].probability == pytest.approx(
        float(torch.softmax(logits, -1).max()), abs=1e-5
    )
    assert (
        find_divergence(model, tokenizer, "p", prompt, (greedy, greedy), ("a", "a"), 0.02) is None
    )

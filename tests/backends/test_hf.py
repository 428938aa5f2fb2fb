import random

import pytest
import torch
from transformers import LogitsProcessor

from loopfix.backends import HFBackend, Request
from loopfix.backends.hf import PenaltyProcessor, generate, trim
from loopfix.lab.stargraph import EOS_ID, make_graph
from loopfix.models import load_model
from loopfix.records import DecodeSettings


@pytest.fixture(scope="module")
def testbed():
    return load_model("loopfix:stargraph", device="cpu")


def mixed_length_prompts(count: int) -> list[list[int]]:
    rng = random.Random(5)
    shapes = [(3, 3), (2, 3), (2, 2), (1, 2)]  # 9, 6, 4 and 2 edges: four prompt lengths
    return [make_graph(rng, *shapes[i % len(shapes)]).prompt_ids() for i in range(count)]


def test_left_padded_batches_match_one_prompt_at_a_time(testbed) -> None:
    model, tokenizer = testbed
    prompts = mixed_length_prompts(12)
    assert len({len(p) for p in prompts}) == 4
    settings = DecodeSettings(temperature=0.0, max_new_tokens=24)
    batched = generate(model, tokenizer, prompts, settings, batch_size=12)
    alone = [generate(model, tokenizer, [p], settings, batch_size=1)[0] for p in prompts]
    assert [g.tokens for g in batched] == [g.tokens for g in alone]


def test_sampling_is_reproducible_for_a_seed(testbed) -> None:
    model, tokenizer = testbed
    prompts = mixed_length_prompts(16)

    def run(seed: int) -> list[list[int]]:
        settings = DecodeSettings(temperature=1.0, max_new_tokens=16, seed=seed)
        return [g.tokens for g in generate(model, tokenizer, prompts, settings, batch_size=8)]

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_finish_reasons() -> None:
    assert trim([4, 5, EOS_ID, 0, 0], EOS_ID, 5).finish_reason == "stop"
    assert trim([4, 5, EOS_ID, 0, 0], EOS_ID, 5).tokens == [4, 5, EOS_ID]
    assert trim([4, 5, 6], EOS_ID, 3).finish_reason == "length"


def test_capture_records_the_top1_probability_and_entropy_of_each_step(testbed) -> None:
    model, tokenizer = testbed
    prompts = mixed_length_prompts(3)
    settings = DecodeSettings(temperature=0.0, max_new_tokens=12)
    plain = generate(model, tokenizer, prompts, settings, batch_size=3)
    captured = generate(model, tokenizer, prompts, settings, batch_size=3, capture=True)
    assert [g.tokens for g in captured] == [g.tokens for g in plain]  # capture changes nothing
    with torch.inference_mode():
        first = torch.softmax(model(torch.tensor([prompts[0]])).logits[0, -1].float(), -1)
    entropy = float(-(first * first.log()).sum())
    result = captured[0]
    assert result.top1 is not None and result.entropy is not None
    assert len(result.top1) == len(result.entropy) == len(result.tokens)
    assert result.top1[0] == pytest.approx(float(first.max()), abs=1e-5)
    assert result.entropy[0] == pytest.approx(entropy, abs=1e-4)


def test_penalties_and_guard_factories_act_on_the_logits(testbed) -> None:
    scores = torch.zeros(1, 6)
    penalised = PenaltyProcessor(2, presence=0.5, frequency=0.25)(
        torch.tensor([[9, 9, 1, 1, 3]]), scores
    )
    assert penalised.tolist() == [[0.0, -1.0, 0.0, -0.75, 0.0, 0.0]]

    model, tokenizer = testbed
    prompts = mixed_length_prompts(4)
    settings = DecodeSettings(temperature=0.0, max_new_tokens=16)
    plain = generate(model, tokenizer, prompts, settings, batch_size=4)
    banned = plain[0].tokens[0]

    class Ban(LogitsProcessor):
        def __call__(self, input_ids, scores):
            scores[:, banned] = -float("inf")
            return scores

    guarded = generate(
        model, tokenizer, prompts, settings, batch_size=4, processors=[lambda width: Ban()]
    )
    assert all(banned not in g.tokens for g in guarded)


def test_backend_seeds_each_batch_by_its_first_request(testbed) -> None:
    model, tokenizer = testbed
    backend = HFBackend(model, tokenizer, batch_size=4)
    requests = [Request(ids=p, seed=100 + i // 4) for i, p in enumerate(mixed_length_prompts(8))]
    settings = DecodeSettings(temperature=1.0, max_new_tokens=12)
    everything = dict(backend.generate(requests, settings))
    second_batch = dict(backend.generate(requests[4:], settings))
    assert [everything[4 + i].tokens for i in range(4)] == [
        second_batch[i].tokens for i in range(4)
    ]
    assert everything[0].text == tokenizer.decode(everything[0].tokens, skip_special_tokens=True)

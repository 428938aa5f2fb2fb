import random

import pytest

from loopfix.backends.hf import generate, trim
from loopfix.lab.stargraph import EOS_ID, make_graph
from loopfix.models import load_model
from loopfix.records import DecodeSettings


@pytest.fixture(scope="module")
def testbed():
    return load_model("loopfix:stargraph", device="cpu")


def mixed_length_prompts(count: int) -> list[list[int]]:
    rng = random.Random(5)
    shapes = [(3, 3), (2, 3), (3, 2), (2, 2)]
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

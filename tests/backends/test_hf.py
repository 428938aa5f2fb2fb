import random

import pytest
import torch

from loopfix.backends import HFBackend, Request
from loopfix.backends.hf import generate
from loopfix.guards import GuardChain, GuardContext, parse_guards
from loopfix.lab.stargraph import make_graph
from loopfix.models import load_model, tiny_model, tiny_tokenizer
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


def test_finish_reasons(testbed) -> None:
    model, tokenizer = testbed
    prompts = mixed_length_prompts(8)
    results = generate(model, tokenizer, prompts, DecodeSettings(max_new_tokens=24))
    for result in results:
        if result.finish_reason == "stop":
            assert result.tokens[-1] == tokenizer.eos_token_id
            assert tokenizer.eos_token_id not in result.tokens[:-1]
        else:
            assert result.finish_reason == "length" and len(result.tokens) == 24
    assert {r.finish_reason for r in results} == {"stop", "length"}


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


def test_penalties_and_guards_act_on_the_logits(testbed) -> None:
    model, tokenizer = testbed
    prompts = mixed_length_prompts(4)
    settings = DecodeSettings(temperature=0.0, max_new_tokens=16)
    plain = generate(model, tokenizer, prompts, settings, batch_size=4)
    penalised = generate(
        model, tokenizer, prompts, settings.model_copy(update={"repetition_penalty": 5.0})
    )
    assert [g.tokens for g in penalised] != [g.tokens for g in plain]
    context = GuardContext.from_tokenizer(tokenizer, model.config.vocab_size)

    def ngram() -> GuardChain:
        return parse_guards("ngram", {"ngram.size": 2}, context)

    banned = generate(model, tokenizer, prompts, settings, batch_size=4, build_chain=ngram)
    for result in banned:
        pairs = list(zip(result.tokens, result.tokens[1:], strict=False))
        assert len(pairs) == len(set(pairs))  # no bigram twice
    assert all(g.guards is not None and g.guards["guards"] == "ngram" for g in banned)


def test_a_sample_does_not_depend_on_its_batch_mates(testbed) -> None:
    model, tokenizer = testbed
    requests = [Request(ids=p, seed=100 + i) for i, p in enumerate(mixed_length_prompts(8))]
    settings = DecodeSettings(temperature=1.0, max_new_tokens=12)
    everything = dict(HFBackend(model, tokenizer, batch_size=4).generate(requests, settings))
    alone = dict(HFBackend(model, tokenizer, batch_size=1).generate(requests[4:], settings))
    assert [everything[4 + i].tokens for i in range(4)] == [alone[i].tokens for i in range(4)]
    assert everything[0].text == tokenizer.decode(everything[0].tokens, skip_special_tokens=True)


def test_a_stop_text_is_cut_from_the_text_and_named() -> None:
    model, tokenizer = tiny_model("gemma3", seed=1), tiny_tokenizer()
    tokenizer.pad_token = tokenizer.eos_token
    backend = HFBackend(model, tokenizer, batch_size=2)
    prompt = [1, 5, 6, 7]  # greedy: "0 0 0 0 l l t 2 h" in 40 tokens
    requests = [Request(ids=prompt), Request(ids=prompt, stop=("l t", "9"))]
    free, stopped = (
        g for _, g in sorted(backend.generate(requests, DecodeSettings(max_new_tokens=40)))
    )
    assert (free.text, free.finish_reason, free.stop) == ("0 0 0 0 l l t 2 h", "length", None)
    assert (stopped.text, stopped.finish_reason, stopped.stop) == ("0 0 0 0 l ", "stop", "l t")
    assert stopped.tokens == free.tokens[: len(stopped.tokens)]
    assert tokenizer.decode(stopped.tokens).endswith("l t")

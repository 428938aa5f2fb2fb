import torch
from transformers import LogitsProcessorList, StoppingCriteriaList

from loopfix.guards import GuardContext, GuardLogitsProcessor, GuardStoppingCriteria, parse_guards
from loopfix.models import tiny_model
from loopfix.records import DecodeSettings
from tests.decoding import plain_greedy

PROMPTS = [[1, 5, 6, 7], [1, 9, 3], [1, 20, 21, 22, 23]]
CONTEXT = GuardContext(vocab_size=128)


def test_none_gives_bit_identical_generation(decode) -> None:
    model = tiny_model("llama")
    settings = DecodeSettings(max_new_tokens=16)
    plain = [plain_greedy(model, p, 16) for p in PROMPTS]
    # The HF adapter with no guard inside the user's own generate,
    processor = GuardLogitsProcessor(parse_guards("none"), 4, 2)
    adapted = [
        plain_greedy(model, p, 16, logits_processor=LogitsProcessorList([processor]))
        for p in PROMPTS
    ]
    assert adapted == plain
    # and our engine with no guard, batched, are plain greedy decoding.
    assert [g.tokens for g in decode(model, PROMPTS, settings)] == plain


def test_an_empty_chain_returns_the_scores_themselves() -> None:
    scores = torch.randn(2, 128)
    processor = GuardLogitsProcessor(parse_guards("none"), 3, 2)
    assert processor(torch.zeros(2, 3, dtype=torch.long), scores) is scores


def test_the_processor_feeds_new_tokens_and_strips_left_padding() -> None:
    pad = 2
    ids = torch.tensor([[pad, pad, 10, 11, 10, 11], [12, 13, 14, 12, 13, 14]])
    processor = GuardLogitsProcessor(parse_guards("dry", {"dry.breaker_ids": []}, CONTEXT), 4, pad)
    scores = torch.zeros(2, 128)
    out = processor(ids, scores)
    reference = parse_guards("dry", {"dry.breaker_ids": []}, CONTEXT)
    reference.add(0, [10, 11], [10, 11])
    reference.add(1, [12, 13, 14, 12], [13, 14])
    assert torch.equal(out, reference.apply(torch.zeros(2, 128)))
    # One more column: only that token is fed.
    more = torch.cat([ids, torch.tensor([[10], [12]])], dim=1)
    reference.extend(0, [10])
    reference.extend(1, [12])
    assert torch.equal(processor(more, torch.zeros(2, 128)), reference.apply(torch.zeros(2, 128)))


def test_stopping_criteria_end_the_rows_cut_stopped(decode) -> None:
    model = tiny_model("llama")
    chain = parse_guards("cut", {"cut.min_span": 8, "cut.max_period": 16}, CONTEXT)
    processor = GuardLogitsProcessor(chain, 4, None)
    output = model.generate(
        input_ids=torch.tensor([PROMPTS[0]]),
        attention_mask=torch.ones(1, 4, dtype=torch.long),
        max_new_tokens=40,
        do_sample=False,
        pad_token_id=2,
        eos_token_id=2,
        logits_processor=LogitsProcessorList([processor]),
        stopping_criteria=StoppingCriteriaList([GuardStoppingCriteria(processor)]),
    )
    args = {"cut.min_span": 8, "cut.max_period": 16}
    looped = decode(model, PROMPTS[:1], DecodeSettings(max_new_tokens=40), "cut", args)[0]
    assert looped.finish_reason == "repetition"
    assert output[0, 4:].tolist() == looped.tokens


def test_the_engine_applies_the_samplers_own_penalties_in_hfs_order(decode) -> None:
    model = tiny_model("llama")
    settings = DecodeSettings(
        max_new_tokens=12, repetition_penalty=1.3, presence_penalty=1.0, frequency_penalty=0.5
    )
    openai = parse_guards("penalty", {"penalty.presence": 1.0, "penalty.frequency": 0.5}, CONTEXT)
    processor = GuardLogitsProcessor(openai, 4, 2)
    # HF runs its repetition penalty first, then the user's processors.
    expected = plain_greedy(
        model,
        PROMPTS[0],
        12,
        repetition_penalty=1.3,
        logits_processor=LogitsProcessorList([processor]),
    )
    assert decode(model, PROMPTS[:1], settings)[0].tokens == expected

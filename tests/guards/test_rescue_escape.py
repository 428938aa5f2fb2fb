"""`rescue.escape=think_end`: a loop inside a think block forces `</think>` instead of a ban.

Exact logits on crafted histories, through a real (word-level) tokenizer's GuardContext.
"""

import math

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from loopfix.guards import GuardChain, GuardContext, GuardError, parse_guards
from loopfix.models import resolve_model_path

WORDS = ["<unk>", "a", "b", "c", "d", "e", "f", "<think>", "</think>"]
THINK, END = 7, 8
WATCH = {"rescue.min_span": 8, "rescue.max_period": 16, "rescue.at": "onset"}
# Output "a b", then "c d" repeated: the period-2 run covers 8 tokens at length 10, onset 2.
LOOP = [1, 2, 3, 4, 3, 4, 3, 4, 3, 4]
BASE = torch.arange(len(WORDS), dtype=torch.float32).unsqueeze(0) - 3.0  # distinct, +/- values


@pytest.fixture(scope="module")
def context() -> GuardContext:
    model = models.WordLevel({word: i for i, word in enumerate(WORDS)}, unk_token="<unk>")
    backend = Tokenizer(model)
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return GuardContext.from_tokenizer(
        PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    )


def escape_chain(context: GuardContext, escape: str = "think_end", **kwargs) -> GuardChain:
    return parse_guards("rescue", {**WATCH, "rescue.escape": escape}, context, **kwargs)


def decode(chain: GuardChain, prompt: list[int], output: list[int]) -> None:
    """Step through `output` after `prompt` as a driver would: apply, then the token."""
    chain.add(0, prompt)
    for token in output:
        chain.apply(BASE.clone())
        chain.extend(0, [token])


def feed(chain: GuardChain, prompt: list[int], output: list[int]) -> torch.Tensor:
    """The logits the chain gives for the step after `output`."""
    decode(chain, prompt, output)
    return chain.apply(BASE.clone())


def forced_end() -> torch.Tensor:
    expected = torch.full_like(BASE, -math.inf)
    expected[0, END] = BASE[0, END]
    return expected


def banned(token: int) -> torch.Tensor:
    expected = BASE.clone()
    expected[0, token] = -math.inf
    return expected


@pytest.mark.parametrize("rollback", [False, True])
def test_a_loop_in_a_think_block_forces_think_end_at_detection(
    context: GuardContext, rollback: bool
) -> None:
    chain = escape_chain(context, rollback=rollback)
    logits = feed(chain, [THINK], LOOP)
    assert torch.equal(logits, forced_end())
    assert chain.pending_rollbacks() == {}  # nothing to take back, even where the driver could
    assert chain.record(0)["rescues"] == [
        {"detected_at": 10, "position": 10, "period": 2, "forced": [END]}
    ]
    chain.extend(0, [END])  # the forced step is one step: the answer decodes freely
    assert torch.equal(chain.apply(BASE.clone()), BASE)


def test_a_think_block_opened_in_the_output_counts(context: GuardContext) -> None:
    logits = feed(escape_chain(context, rollback=False), [1], [THINK, *LOOP])
    assert torch.equal(logits, forced_end())


def test_after_think_end_the_rescue_bans_as_usual(context: GuardContext) -> None:
    prompt = [THINK, 5, END]
    escaped = feed(escape_chain(context, rollback=False), prompt, LOOP)
    plain = feed(escape_chain(context, "ban", rollback=False), prompt, LOOP)
    assert torch.equal(escaped, banned(3))  # "c" would continue "... c d | c"
    assert torch.equal(escaped, plain)


def test_the_default_escape_is_the_ban(context: GuardContext) -> None:
    chain = parse_guards("rescue", WATCH, context, rollback=False)
    assert torch.equal(feed(chain, [THINK], LOOP), banned(3))
    rolled = parse_guards("rescue", WATCH, context)  # HF: roll back to the onset, then ban there
    decode(rolled, [THINK], LOOP)
    assert rolled.pending_rollbacks() == {0: 2}


def test_a_banned_think_end_is_still_forced(context: GuardContext) -> None:
    chain = escape_chain(context, rollback=False)
    decode(chain, [THINK], LOOP)
    logits = BASE.clone()
    logits[0, END] = -math.inf  # what an earlier guard's ban leaves
    expected = torch.full_like(BASE, -math.inf)
    expected[0, END] = 0.0
    assert torch.equal(chain.apply(logits), expected)


def test_without_think_tokens_in_the_vocabulary_the_escape_is_off() -> None:
    # The testbed's tokenizer encodes "</think>" to one token, <pad>: not a marker.
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("loopfix:stargraph"))
    context = GuardContext.from_tokenizer(tokenizer)
    pad = tokenizer.pad_token_id
    assert tokenizer.encode("</think>", add_special_tokens=False) == [pad]
    assert tokenizer.encode("<think>", add_special_tokens=False) == [pad]
    # The prompt opens with <pad>: taken for "<think>", it would open a think block.
    prompt, loop = [pad, 24], [25, 19, 30] * 3  # detected at its last token
    base = torch.linspace(-2.0, 2.0, len(tokenizer)).unsqueeze(0)
    results = []
    for escape in ("think_end", "ban"):
        chain = escape_chain(context, escape, rollback=False)
        chain.add(0, prompt)
        for token in loop:
            chain.apply(base.clone())
            chain.extend(0, [token])
        results.append(chain.apply(base.clone()))
        assert "forced" not in chain.record(0)["rescues"][0]
    assert torch.equal(results[0], results[1])
    assert math.isinf(results[0][0, 25]) and torch.isfinite(results[0]).sum() == len(tokenizer) - 1


def test_a_bad_escape_names_the_guard_and_the_parameter(context: GuardContext) -> None:
    with pytest.raises(GuardError, match="'rescue'.*'escape'"):
        parse_guards("rescue", {"rescue.escape": "close"}, context)

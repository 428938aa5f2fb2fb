"""The end of thinking as a token sequence (issue 52, point 3): SmolLM2's vocabulary has no
single `</think>` token (it spells it `</`, `think`, `>`), so a think-escape and a thinking
budget force the marker one token a step. Exact logits on real token ids of its tokenizer."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer

from loopfix.guards import GuardChain, GuardContext, GuardError, parse_guards
from loopfix.models import resolve_model_path

WATCH = {"rescue.min_span": 8, "rescue.max_period": 16, "rescue.at": "onset"}


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(resolve_model_path("loopfix:smollm2"))


@pytest.fixture(scope="module")
def context(tokenizer) -> GuardContext:
    return GuardContext.from_tokenizer(tokenizer)


def ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


def run(chain: GuardChain, prompt: list[int], output: list[int], vocab: int) -> list[int]:
    """Feed `output`, then let the chain pick greedily from flat logits until it stops
    forcing; the tokens it forced."""
    chain.add(0, prompt)
    for token in output:
        chain.apply(torch.zeros(1, vocab))
        chain.extend(0, [token])
    forced = []
    while True:
        logits = chain.apply(torch.zeros(1, vocab))
        allowed = torch.isfinite(logits[0]).nonzero().flatten().tolist()
        if len(allowed) != 1:
            return forced
        forced.append(allowed[0])
        chain.extend(0, allowed)


def test_the_markers_are_three_tokens_in_smollm2(tokenizer) -> None:
    assert len(ids(tokenizer, "</think>")) == 3 and len(ids(tokenizer, "<think>")) == 3


def test_a_think_escape_forces_the_whole_marker_after_a_line_break(tokenizer, context) -> None:
    chain = parse_guards("rescue", {**WATCH, "rescue.escape": "think_end"}, context)
    prompt = ids(tokenizer, "Q?\n<think>\n")
    loop = ids(tokenizer, " 6 + 20 = 60.") * 4  # mid-line: no line break at the detection
    forced = run(chain, prompt, loop, len(tokenizer))
    assert forced == ids(tokenizer, "\n") + ids(tokenizer, "</think>")
    (rescue,) = chain.record(0)["rescues"]
    assert rescue["forced"] == forced
    assert chain.pending_rollbacks() == {}


def test_without_a_think_block_the_escape_bans(tokenizer, context) -> None:
    chain = parse_guards("rescue", {**WATCH, "rescue.escape": "think_end"}, context)
    prompt = ids(tokenizer, "Q?\n<think>\n1.\n</think>\n")  # the block closed in the prompt
    assert run(chain, prompt, ids(tokenizer, " 6 + 20 = 60.") * 4, len(tokenizer)) == []
    (rescue,) = chain.record(0)["rescues"]
    assert "token" in rescue and "forced" not in rescue


def test_a_budget_forces_the_end_after_its_thought_tokens(tokenizer, context) -> None:
    chain = parse_guards("think-budget", {"think-budget.tokens": 5}, context)
    thought = ids(tokenizer, "<think>\n1 + 2: 3.\n")
    assert len(thought) - 3 >= 5  # five thought tokens after the marker
    forced = run(chain, ids(tokenizer, "Q?"), thought[: 3 + 5], len(tokenizer))
    assert forced[-3:] == ids(tokenizer, "</think>")
    assert chain.record(0)["think_exit"]["thought"] == 5


def test_a_thought_that_closes_within_the_budget_is_left_alone(tokenizer, context) -> None:
    chain = parse_guards("think-budget", {"think-budget.tokens": 50}, context)
    closed = ids(tokenizer, "<think>\n1 + 2: 3.\n</think>\nAnswer: 3")
    assert run(chain, ids(tokenizer, "Q?"), closed, len(tokenizer)) == []
    assert "think_exit" not in chain.record(0)


def test_the_random_exit_control_draws_per_prompt_within_its_range(tokenizer, context) -> None:
    args = {"think-budget.tokens": 40, "think-budget.low": 10}
    thought = ids(tokenizer, "<think>\n") + ids(tokenizer, " 1, 2, 3, 4, 5, 6, 7, 8, 9") * 8
    points = {}
    for question in ("Q1?", "Q2?", "Q3?", "Q4?", "Q1?"):
        chain = parse_guards("think-budget", args, context)
        run(chain, ids(tokenizer, question), thought, len(tokenizer))
        points.setdefault(question, set()).add(chain.record(0)["think_exit"]["thought"])
    assert all(10 <= p <= 40 for found in points.values() for p in found)
    assert len(points["Q1?"]) == 1  # the same prompt draws the same point
    assert len({p for found in points.values() for p in found}) > 1


def test_a_vocabulary_that_cannot_spell_the_marker_is_an_error_for_a_budget() -> None:
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("loopfix:stargraph"))
    chain = parse_guards("think-budget", {}, GuardContext.from_tokenizer(tokenizer))
    with pytest.raises(GuardError, match="think-budget"):
        chain.add(0, [1, 2])


def test_low_above_tokens_is_refused() -> None:
    with pytest.raises(GuardError, match="think-budget"):
        parse_guards("think-budget", {"think-budget.tokens": 5, "think-budget.low": 9})


# Five steps that restate the first in other words (no new content word or number), then the
# same count of steps that each bring something new: text whose tokens never repeat as a period.
FIRST = "The bridge carries 12 trains north across the river.\n"
RESTATED = [
    "Again, the bridge carries 12 trains north across the river.\n",
    "Wait, 12 trains north: the bridge carries them across the river.\n",
    "Right, the bridge carries 12 trains across the river, north.\n",
    "Check: across the river, north, the bridge carries 12 trains.\n",
    "Okay, so 12 trains north, across the river, on the bridge.\n",
]
PROGRESS = [
    "Each train holds 40 passengers in its coaches.\n",
    "That makes 480 passengers every morning.\n",
    "The evening service adds 5 extra trains.\n",
    "Those bring 200 more travellers home.\n",
    "So the daily total reaches 680 riders.\n",
]


@pytest.mark.parametrize("restated", [True, False])
def test_restated_steps_end_a_thought_that_repeats_no_text(
    tokenizer, context, restated: bool
) -> None:
    args = {**WATCH, "rescue.escape": "think_end", "rescue.restated": restated}
    chain = parse_guards("rescue", args, context)
    prompt = ids(tokenizer, "Q?\n<think>\n")
    forced = run(chain, prompt, ids(tokenizer, FIRST + "".join(RESTATED)), len(tokenizer))
    # The exact watch sees no repeat; the restated-steps trigger ends the thought at the fifth
    # restatement's line break (so without a newline first), and only when asked to.
    assert forced == (ids(tokenizer, "</think>") if restated else [])
    if restated:
        (rescue,) = chain.record(0)["rescues"]
        assert rescue["period"] == 0 and rescue["forced"] == forced


def test_steps_that_bring_something_new_are_left_alone(tokenizer, context) -> None:
    args = {**WATCH, "rescue.escape": "think_end", "rescue.restated": True}
    chain = parse_guards("rescue", args, context)
    prompt = ids(tokenizer, "Q?\n<think>\n")
    text = FIRST + "".join(RESTATED[:4]) + "".join(PROGRESS)
    assert run(chain, prompt, ids(tokenizer, text), len(tokenizer)) == []

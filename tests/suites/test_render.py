from pathlib import Path

import pytest
from transformers import AutoTokenizer

from loopfix.lab.stargraph import StarGraph
from loopfix.models import load_model
from loopfix.suites import SuiteError, SuiteItem, stargraph_suite
from loopfix.suites.render import (
    TURN_STOPS,
    prompt_ids,
    prompting,
    stop_texts,
    supports_thinking,
)
from loopfix.suites.tasks import task_item

# Renders to testbed words, so the ids show what the template did ("back" marks thinking off).
TEMPLATE = (
    "{% for m in messages %}{{ m.content }} , {% endfor %}{% if add_generation_prompt %}:"
    "{% if enable_thinking is defined and not enable_thinking %} back{% endif %}{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer():
    return load_model("loopfix:stargraph", device="cpu")[1]


def test_plain_prompt_without_template_gives_the_testbed_ids(tokenizer) -> None:
    item = stargraph_suite(1, seed=2)[0]
    assert prompting(tokenizer) == "completion"
    assert prompt_ids(item, tokenizer) == StarGraph.from_dict(item.meta["graph"]).prompt_ids()


@pytest.fixture(scope="module")
def base_tokenizer(smollm2_folder: Path):
    """A real tokenizer with its chat template taken away, as a base model's comes."""
    tokenizer = AutoTokenizer.from_pretrained(smollm2_folder)
    tokenizer.chat_template = None
    return tokenizer


def test_without_template_a_chat_is_a_few_shot_transcript(base_tokenizer) -> None:
    assert prompting(base_tokenizer) == "completion"
    count = task_item(seed=0, index=0)  # a chat with one worked example before the question
    text = base_tokenizer.decode(prompt_ids(count, base_tokenizer))
    assert text == (
        "Question: Count from 3 to 9.\nAnswer: 3, 4, 5, 6, 7, 8, 9\n\n"
        "Question: Count from 17 to 26.\nAnswer:"
    )
    system = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
    text = base_tokenizer.decode(prompt_ids(SuiteItem(id="s", messages=system), base_tokenizer))
    assert text == "Be brief.\n\nQuestion: Hi?\nAnswer:"
    plain = SuiteItem(id="p", prompt="Once upon a time")
    assert prompt_ids(plain, base_tokenizer) == base_tokenizer("Once upon a time")["input_ids"]
    # The transcript's answer ends where the model starts another turn; a plain prompt has no
    # turn to end.
    assert stop_texts(count, base_tokenizer) == TURN_STOPS == ("\nQuestion:", "\nAnswer:")
    assert stop_texts(plain, base_tokenizer) == ()
    tool = SuiteItem(id="t", messages=[{"role": "tool", "content": "42"}])
    with pytest.raises(SuiteError, match="role 'tool' has no place in a completion prompt"):
        prompt_ids(tool, base_tokenizer)


def test_chat_template_and_think_switch(tokenizer) -> None:
    tokenizer.chat_template = TEMPLATE
    try:
        assert supports_thinking(tokenizer) and prompting(tokenizer) == "chat-template"
        item = SuiteItem(id="p", prompt="ka be")
        on, off, unset = (prompt_ids(item, tokenizer, think) for think in (True, False, None))
        assert on == unset == tokenizer("ka be , :")["input_ids"]
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": "ka be"}],
            add_generation_prompt=True,
            tokenize=False,
            enable_thinking=False,
        )
        assert off == tokenizer(text, add_special_tokens=False)["input_ids"]
        # A chat model ends at its own end-of-turn token: no stop text.
        assert stop_texts(task_item(seed=0, index=0), tokenizer) == ()
    finally:
        tokenizer.chat_template = None

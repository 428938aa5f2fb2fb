import pytest

from loopfix.lab.stargraph import StarGraph
from loopfix.models import load_model
from loopfix.suites import SuiteError, SuiteItem, stargraph_suite
from loopfix.suites.render import prompt_ids, supports_thinking

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
    assert prompt_ids(item, tokenizer) == StarGraph.from_dict(item.meta["graph"]).prompt_ids()
    chat = SuiteItem(id="c", messages=[{"role": "user", "content": "ka"}])
    with pytest.raises(SuiteError, match="no chat template"):
        prompt_ids(chat, tokenizer)


def test_chat_template_and_think_switch(tokenizer) -> None:
    tokenizer.chat_template = TEMPLATE
    try:
        assert supports_thinking(tokenizer)
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
    finally:
        tokenizer.chat_template = None

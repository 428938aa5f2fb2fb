"""Checks on tiny config-built models: a sliding-window model and a batch of mixed lengths."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from loopfix.consistency import ConsistencyConfig, ConsistencyError, run_consistency
from loopfix.consistency.run import _prompts
from loopfix.consistency.session import Session
from loopfix.models import tiny_model, tiny_tokenizer
from loopfix.suites import load_suite
from loopfix.suites.render import TURN_STOPS


def _suite(tmp_path: Path) -> Path:
    # Lengths 3..9 words: rows of one batch need left padding.
    words = "a b c d e f g h i".split()
    lines = [{"id": f"p{i}", "prompt": " ".join(words[: 3 + i])} for i in range(7)]
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _tokenizer():
    tokenizer = tiny_tokenizer()
    tokenizer.pad_token, tokenizer.padding_side = tokenizer.eos_token, "left"
    return tokenizer


def test_sliding_window_shorter_than_the_output_warns(tmp_path: Path) -> None:
    config = ConsistencyConfig(
        model="tiny:gemma2",
        suite=str(_suite(tmp_path)),
        n=7,
        checks=["context", "batch_invariance"],
        batch_sizes=[4],
        max_new_tokens=20,
    )
    result = run_consistency(config, tiny_model("gemma2"), _tokenizer())
    context = result.check("context")
    assert context.numbers["sliding_window"] == 16
    assert context.numbers["longest_prompt_plus_output"] == 9 + 20
    assert context.status == "warn" and "sliding window 16" in context.summary
    batch = result.check("batch_invariance")
    assert batch.numbers["rows_in_flight"] == [1, 4]
    assert batch.status in ("pass", "warn", "fail")


def test_prompts_over_the_window_fail_the_context_check(tmp_path: Path) -> None:
    config = ConsistencyConfig(
        model="tiny:llama",
        suite=str(_suite(tmp_path)),
        n=7,
        checks=["context"],
        max_new_tokens=250,  # the tiny window is 256: the longest prompts do not fit
    )
    result = run_consistency(config, tiny_model("llama"), _tokenizer())
    context = result.check("context")
    assert context.status == "fail"
    assert context.numbers["over_window"] == 3  # prompts of 7, 8 and 9 words


def test_a_template_check_on_a_model_without_one_is_an_error(tmp_path: Path) -> None:
    config = ConsistencyConfig(
        model="tiny:llama", suite=str(_suite(tmp_path)), checks=["context"], template=True
    )
    with pytest.raises(ConsistencyError, match="no chat template"):
        run_consistency(config, tiny_model("llama"), _tokenizer())


def test_chat_template_prompts_are_checked_for_lost_text(tmp_path: Path) -> None:
    tokenizer = _tokenizer()
    tokenizer.chat_template = "{% for m in messages %}<s> {{ m['content'] }} {% endfor %}"
    config = ConsistencyConfig(
        model="tiny:llama",
        suite=str(_suite(tmp_path)),
        n=3,
        checks=["context"],
        max_new_tokens=4,
        template=True,
    )
    context = run_consistency(config, tiny_model("llama"), tokenizer).check("context")
    assert context.numbers["chat_template"] is True
    assert context.numbers["template_dropped_text"] == 0


def test_a_template_that_cuts_the_prompt_warns(tmp_path: Path) -> None:
    tokenizer = _tokenizer()
    tokenizer.chat_template = "{% for m in messages %}<s> {{ m['content'][:5] }} {% endfor %}"
    config = ConsistencyConfig(
        model="tiny:llama", suite=str(_suite(tmp_path)), n=3, checks=["context"], max_new_tokens=4
    )
    context = run_consistency(config, tiny_model("llama"), tokenizer).check("context")
    assert context.numbers["template_dropped_text"] == 2  # "a b c d", "a b c d e" cut to "a b c"
    assert context.status == "warn" and "drops text of 2 prompts" in context.summary


def test_determinism_without_the_thread_comparison(tmp_path: Path) -> None:
    config = ConsistencyConfig(
        model="tiny:llama",
        suite=str(_suite(tmp_path)),
        n=3,
        checks=["determinism", "loop_stability"],
        temperatures=[0.0, 1.0],
        batch_sizes=[3],
        max_new_tokens=6,
        compare_threads=False,
    )
    result = run_consistency(config, tiny_model("llama"), _tokenizer())
    determinism = result.check("determinism")
    assert "diverging_prompts_threads" not in determinism.numbers
    assert determinism.status == "pass" and "threads" not in determinism.summary
    assert "threads" not in result.check("loop_stability").numbers["factors"]


def test_a_model_without_a_chat_template_gets_transcripts_that_end_at_their_stop_texts(
    tmp_path: Path,
) -> None:
    # As a scan prompts a base model: a chat becomes a Question/Answer transcript whose answer
    # ends at the next label; a plain prompt is text to continue, with no stop.
    chat = [
        {"role": "user", "content": "a b"},
        {"role": "assistant", "content": "c"},
        {"role": "user", "content": "d e"},
    ]
    path = tmp_path / "suite.jsonl"
    lines = [{"id": "chat", "messages": chat}, {"id": "plain", "prompt": "a b c"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    tokenizer = _tokenizer()
    prompts, template_used = _prompts(load_suite(str(path), 2, 0), tokenizer, None)
    by_id = {prompt.id: prompt for prompt in prompts}
    assert not template_used and by_id["chat"].stop == TURN_STOPS and by_id["plain"].stop == ()
    transcript = "Question: a b\nAnswer: c\n\nQuestion: d e\nAnswer:"
    assert by_id["chat"].ids == tokenizer(transcript)["input_ids"]
    # The stops reach the engine: a text from the middle of a free greedy output ends it there.
    config = ConsistencyConfig(model="tiny:llama", suite=str(path), n=2, max_new_tokens=40)
    free = Session(tiny_model("llama"), tokenizer, prompts, config)
    tokens = free.hf_run("free", "batch", free.settings()).outputs[0]
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    stop = text[len(text) // 2 :][:4]
    stopped_prompts = [replace(prompts[0], stop=(stop,)), prompts[1]]
    session = Session(tiny_model("llama"), tokenizer, stopped_prompts, config)
    stopped = session.hf_run("stopped", "batch", session.settings()).outputs[0]
    assert len(stopped) < len(tokens) and tokens[: len(stopped)] == stopped
    assert stop in tokenizer.decode(stopped, skip_special_tokens=True)
    assert stop not in tokenizer.decode(stopped[:-1], skip_special_tokens=True)

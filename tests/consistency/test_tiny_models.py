"""Checks on tiny config-built models: a sliding-window model and a batch of mixed lengths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopfix.consistency import ConsistencyConfig, ConsistencyError, run_consistency
from loopfix.models import tiny_model, tiny_tokenizer


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

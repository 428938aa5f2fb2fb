"""Tiny random-initialised models of every family in the table, built offline for tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel

__all__ = ["TINY_VOCAB_SIZE", "tiny_config", "tiny_model", "tiny_tokenizer"]

TINY_VOCAB_SIZE = 128

# A config keyword's value: a width or count, a flag, a token id that may be absent, a layer
# type list.
ConfigSettings = dict[str, int | bool | list[str] | None]

_WORDS = ["<unk>", "<s>", "</s>", *"abcdefghijklmnopqrstuvwxyz", *"0123456789"]

_TOKENS: ConfigSettings = {
    "vocab_size": TINY_VOCAB_SIZE,
    "bos_token_id": _WORDS.index("<s>"),
    "eos_token_id": _WORDS.index("</s>"),
    "pad_token_id": None,
}

# Widths differ (64 residual, 128 MLP) so that a transposed weight cannot pass a shape check.
_COMMON: ConfigSettings = {
    **_TOKENS,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    # Attention and DeltaNet inner widths (4 x 8 = 32) differ from the residual width too.
    "head_dim": 8,
    "max_position_embeddings": 256,
}

_HYBRID: ConfigSettings = {
    # One Gated DeltaNet layer and one softmax-attention layer, so both mixers are present.
    "layer_types": ["linear_attention", "full_attention"],
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 8,
    "linear_conv_kernel_dim": 4,
}

_SLIDING: ConfigSettings = {
    "sliding_window": 16,
    "layer_types": ["sliding_attention", "full_attention"],
}

# Gemma 3 270M's shape in small: one key/value head shared by all query heads, the attention
# scale from the head width (the real model's query_pre_attn_scalar is its head_dim, 256), and
# the output layer tied to the embedding (which the model scales by sqrt(hidden_size)). Its
# q/k norms come with the architecture.
_GEMMA3: ConfigSettings = {
    "num_key_value_heads": 1,
    "query_pre_attn_scalar": _COMMON["head_dim"],
    "tie_word_embeddings": True,
}

# family -> (model_type, config settings)
_TINY: dict[str, tuple[str, ConfigSettings]] = {
    "llama": ("llama", _COMMON),
    "mistral": ("mistral", _COMMON),
    "qwen2": ("qwen2", _COMMON),
    "qwen3": ("qwen3", _COMMON),
    "phi3": ("phi3", _COMMON),
    "gemma2": ("gemma2", {**_COMMON, **_SLIDING}),
    "gemma3": ("gemma3_text", {**_COMMON, **_SLIDING, **_GEMMA3}),
    "gpt2": (
        "gpt2",
        {**_TOKENS, "n_embd": 64, "n_inner": 128, "n_layer": 2, "n_head": 4, "n_positions": 256},
    ),
    "qwen3_next": ("qwen3_next", {**_COMMON, **_HYBRID, "num_experts": 0}),
    "qwen3_5": ("qwen3_5_text", {**_COMMON, **_HYBRID}),
}


def tiny_config(family: str) -> PretrainedConfig:
    """A two-layer config of a table family (residual width 64, MLP width 128, vocab 128)."""
    if family not in _TINY:
        raise ValueError(f"no tiny config for {family!r}; families: {', '.join(sorted(_TINY))}")
    model_type, settings = _TINY[family]
    return AutoConfig.for_model(model_type, **settings)


def tiny_model(family: str, seed: int = 0) -> PreTrainedModel:
    """A randomly initialised tiny model in eval mode; the same seed gives the same weights."""
    config = tiny_config(family)
    # fork_rng keeps the caller's global random state untouched by the seeding.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config)
    return model.eval()


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A whitespace word-level tokenizer over letters and digits, with no pad token.

    Having no pad token is deliberate: load_model's pad-with-eos rule is then exercised.
    """
    backend = Tokenizer(models.WordLevel({word: i for i, word in enumerate(_WORDS)}, "<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )

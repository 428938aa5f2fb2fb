"""The second real model, Gemma 3 270M base, from its GGUF file (`loopfix:gemma3-270m`):
sliding-window and global layers, q/k norms, one key/value head, a 262k vocabulary tied to an
embedding scaled by sqrt(width), and no chat template."""

from pathlib import Path

import pytest
import torch

from loopfix.models import file_sha256, load_model
from loopfix.models.packaged import PACKAGED_MODELS, packaged_model_path
from loopfix.suites import arith_suite
from tests.decoding import assert_engine_equals_generate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gemma3(gemma3_folder: Path):
    return load_model("loopfix:gemma3-270m", device="cpu")


def test_the_joined_file_is_the_pinned_one_and_keys_its_folder(gemma3_folder: Path) -> None:
    path = packaged_model_path("gemma3-270m")
    assert file_sha256(path) == PACKAGED_MODELS["gemma3-270m"].sha256 == gemma3_folder.name


def test_the_converted_model_is_gemma3_with_its_shape(gemma3) -> None:
    model, tokenizer = gemma3
    config = model.config
    assert model.dtype == torch.float32 and config.model_type == "gemma3_text"
    assert {"sliding_attention", "full_attention"} == set(config.layer_types)
    assert config.num_key_value_heads == 1 and config.vocab_size == 262_144
    assert model.lm_head.weight is model.model.embed_tokens.weight  # tied, one tensor
    assert not tokenizer.chat_template and tokenizer.eos_token == "<eos>"


def test_engine_equals_model_generate_past_the_sliding_window(gemma3) -> None:
    model, tokenizer = gemma3
    text = " ".join(item.prompt or "" for item in arith_suite(40, seed=3))
    ids = tokenizer(text)["input_ids"]
    window = model.config.sliding_window
    # The long prompt crosses the 512-token window during decoding; the short one shares its
    # batch, left-padded by hundreds of columns.
    prompts = [ids[: window - 8], ids[:20]]
    assert_engine_equals_generate(model, tokenizer, prompts)

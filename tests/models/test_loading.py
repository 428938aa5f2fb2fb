import json
from pathlib import Path

import huggingface_hub.constants
import pytest
import torch

from loopfix.models import (
    ModelLoadError,
    bundled_testbeds,
    load_model,
    resolve_model_path,
    tiny_model,
    tiny_tokenizer,
)
from loopfix.models.loading import TESTBED_DIR_VARIABLE, resolve_dtype


def _save_tiny(folder: Path, family: str = "llama"):
    model, tokenizer = tiny_model(family), tiny_tokenizer()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model


@pytest.fixture
def testbeds(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "checkpoints"
    monkeypatch.setenv(TESTBED_DIR_VARIABLE, str(root))
    _save_tiny(root / "stargraph")
    _save_tiny(root / "stargraph-clean")
    (root / "not-a-model").mkdir()
    return root


def test_round_trip_gives_identical_logits(family, tmp_path):
    model = _save_tiny(tmp_path, family)
    loaded, tokenizer = load_model(tmp_path, device="cpu")
    batch = tokenizer(["a b c d", "e f"], return_tensors="pt", padding=True)
    assert torch.equal(model(**batch).logits, loaded(**batch).logits)
    assert not loaded.training
    assert loaded.dtype == torch.float32


def test_tokenizer_pads_left_with_eos(tmp_path):
    _save_tiny(tmp_path)
    model, tokenizer = load_model(str(tmp_path), device="cpu")
    assert tokenizer.padding_side == "left"
    assert tokenizer.pad_token == tokenizer.eos_token == "</s>"
    assert model.generation_config.pad_token_id == tokenizer.eos_token_id
    batch = tokenizer(["a b c", "d"], padding=True)
    assert batch["input_ids"][1] == [tokenizer.eos_token_id] * 2 + tokenizer("d")["input_ids"]


def test_dtype_string_is_honoured(tmp_path):
    _save_tiny(tmp_path)
    model, _ = load_model(tmp_path, device="cpu", dtype="bfloat16")
    assert model.dtype == torch.bfloat16


def test_bundled_testbeds_via_override(testbeds):
    assert bundled_testbeds() == ["stargraph", "stargraph-clean"]
    assert resolve_model_path("loopfix:stargraph") == str(testbeds / "stargraph")
    assert resolve_model_path("loopfix:stargraph-clean") == str(testbeds / "stargraph-clean")
    model, _ = load_model("loopfix:stargraph", device="cpu")
    assert model.config.model_type == "llama"


@pytest.mark.parametrize("name", ["stargraph-dirty", "not-a-model", "../checkpoints/stargraph"])
def test_unknown_testbed_lists_the_available_ones(testbeds, name):
    with pytest.raises(ModelLoadError, match=f"loopfix:{name}") as caught:
        resolve_model_path(f"loopfix:{name}")
    assert "available: loopfix:stargraph, loopfix:stargraph-clean" in str(caught.value)


def test_no_testbeds_installed(tmp_path, monkeypatch):
    monkeypatch.setenv(TESTBED_DIR_VARIABLE, str(tmp_path / "absent"))
    assert bundled_testbeds() == []
    with pytest.raises(
        ModelLoadError,
        match="available: loopfix:smollm2, loopfix:gemma3-270m, loopfix:smollm2-think ",
    ):
        resolve_model_path("loopfix:stargraph")


@pytest.mark.parametrize(
    "spec", ["/no/such/model", "./missing", "~/loopfix-missing-model", "a/b/c", "runs/missing"]
)
def test_missing_local_path_is_named(spec, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(ModelLoadError, match="does not exist") as caught:
        resolve_model_path(spec)
    assert Path(spec).name in str(caught.value)


def test_missing_path_object_is_never_a_hub_id():
    with pytest.raises(ModelLoadError, match="does not exist"):
        resolve_model_path(Path("owner/name"))


def test_file_is_not_a_model(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({}))
    with pytest.raises(ModelLoadError, match="is a file"):
        resolve_model_path(tmp_path / "config.json")


@pytest.mark.parametrize("spec", ["gpt2", "Qwen/Qwen3-0.6B"])
def test_hub_ids_pass_through(spec, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_model_path(spec) == spec


def test_hub_id_offline_gives_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads the variable once, at import; set the flag it actually consults.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelLoadError, match="loopfix-tests/no-such-model.*Hugging Face Hub"):
        load_model("loopfix-tests/no-such-model", device="cpu")


def test_bad_dtype_lists_the_choices():
    with pytest.raises(ValueError, match="auto, float32, bfloat16, float16"):
        load_model("loopfix-tests/never-loaded", dtype="fp8")


@pytest.mark.parametrize(
    ("dtype", "device", "expected"),
    [
        (None, "cpu", torch.float32),
        ("auto", "cpu", torch.float32),
        (None, "cuda", "auto"),
        ("auto", "cuda:1", "auto"),
        ("float16", "cpu", torch.float16),
        (torch.bfloat16, "cuda", torch.bfloat16),
    ],
)
def test_resolve_dtype(dtype, device, expected):
    assert resolve_dtype(dtype, device) == expected


def test_remote_code_is_not_trusted_by_default(tmp_path):
    config = {
        "model_type": "loopfix_custom",
        "auto_map": {
            "AutoConfig": "configuration_custom.CustomConfig",
            "AutoModelForCausalLM": "modeling_custom.CustomModel",
        },
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        load_model(tmp_path, device="cpu")

import pytest
from transformers import AutoConfig

from loopfix.models import (
    UnsupportedArchitectureError,
    architecture_for,
    supported_families,
    tiny_config,
    tiny_model,
)
from loopfix.models.architectures import ARCHITECTURES


def test_families_cover_the_brief():
    expected = {"llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "gpt2"}
    hybrids = {"qwen3_next", "qwen3_5"}
    assert set(supported_families()) == expected | hybrids


def test_each_model_type_maps_to_one_family():
    model_types = [model_type for entry in ARCHITECTURES for model_type in entry.model_types]
    assert len(model_types) == len(set(model_types))


def test_model_and_config_give_the_same_entry(family):
    model = tiny_model(family)
    assert architecture_for(model) is architecture_for(model.config)
    assert architecture_for(model).family == family


def test_unknown_model_type_names_it_and_the_families():
    with pytest.raises(UnsupportedArchitectureError) as caught:
        architecture_for(AutoConfig.for_model("opt"))
    message = str(caught.value)
    assert "'opt'" in message
    assert all(family in message for family in supported_families())


# Qwen3-Next is in the table, but only without experts (its default config has 512).
@pytest.mark.parametrize("model_type", ["mixtral", "qwen3_moe", "qwen3_next"])
def test_mixture_of_experts_is_refused(model_type):
    with pytest.raises(UnsupportedArchitectureError, match="mixture of experts") as caught:
        architecture_for(AutoConfig.for_model(model_type))
    assert repr(model_type) in str(caught.value)


def test_tiny_qwen3_next_is_dense():
    assert architecture_for(tiny_config("qwen3_next")).family == "qwen3_next"

import pytest
import torch
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM

from loopfix.models import (
    UnsupportedArchitectureError,
    architecture_for,
    attn_out_proj,
    decoder_layers,
    down_proj,
    tiny_config,
    tiny_model,
    write_matrix,
)
from loopfix.models.modules import num_layers, residual_width, token_mixer

WIDTH = 64
MLP_WIDTH = 128


def _projections(model):
    for index in range(num_layers(model)):
        yield down_proj(model, index)
        yield attn_out_proj(model, index)


def test_layers_and_width(family):
    model = tiny_model(family)
    layers = decoder_layers(model)
    assert len(layers) == num_layers(model) == 2
    assert all(layer in set(model.modules()) for layer in layers)
    assert residual_width(model) == WIDTH


def test_down_proj_writes_from_mlp_width_to_residual(family):
    model = tiny_model(family)
    orientation = architecture_for(model).orientation
    for index in range(num_layers(model)):
        assert write_matrix(down_proj(model, index), orientation).shape == (WIDTH, MLP_WIDTH)
        assert write_matrix(attn_out_proj(model, index), orientation).shape[0] == WIDTH


def test_column_j_is_what_input_j_writes(family):
    """A one-hot input e_j moves the module's output by exactly column j of write_matrix."""
    model = tiny_model(family)
    orientation = architecture_for(model).orientation
    for module in _projections(model):
        matrix = write_matrix(module, orientation)
        n_inputs = matrix.shape[1]
        with torch.no_grad():
            baseline = module(torch.zeros(n_inputs))
            for j in (0, n_inputs - 1):
                moved = module(torch.eye(n_inputs)[j]) - baseline
                torch.testing.assert_close(moved, matrix[:, j], rtol=0, atol=1e-6)


def test_editing_the_view_edits_the_parameter(family):
    model = tiny_model(family)
    orientation = architecture_for(model).orientation
    for module in _projections(model):
        matrix = write_matrix(module, orientation)
        assert matrix.data_ptr() == module.weight.data_ptr()
        direction = torch.arange(WIDTH, dtype=matrix.dtype)
        matrix[:, 3] = direction
        assert torch.equal(write_matrix(module, orientation)[:, 3], direction)


@pytest.mark.parametrize("family", ["qwen3_next", "qwen3_5"])
def test_hybrid_mixers_follow_layer_types(family):
    model = tiny_model(family)
    kinds = {"linear_attention": "linear_attention", "full_attention": "attention"}
    expected = [kinds[layer_type] for layer_type in model.config.layer_types]
    assert [token_mixer(model, i).kind for i in range(num_layers(model))] == expected
    assert attn_out_proj(model, 0) is decoder_layers(model)[0].linear_attn.out_proj
    assert attn_out_proj(model, 1) is decoder_layers(model)[1].self_attn.o_proj


def test_multimodal_gemma3_decoder_is_found_under_the_language_model():
    vision = AutoConfig.for_model(
        "siglip_vision_model",
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=28,
        patch_size=14,
    )
    config = AutoConfig.for_model(
        "gemma3",
        text_config=tiny_config("gemma3").to_dict(),
        vision_config=vision.to_dict(),
        mm_tokens_per_image=4,
    )
    model = AutoModelForCausalLM.from_config(config)
    assert decoder_layers(model) == list(model.model.language_model.layers)
    assert residual_width(model) == WIDTH
    assert down_proj(model, 1) is model.model.language_model.layers[1].mlp.down_proj


@pytest.mark.parametrize("index", [-1, 2])
def test_layer_index_out_of_range(index):
    with pytest.raises(IndexError, match=r"0\.\.1"):
        down_proj(tiny_model("llama"), index)


def test_missing_module_is_reported():
    model = tiny_model("llama")
    model.model.layers[1].mlp = nn.Identity()
    with pytest.raises(UnsupportedArchitectureError, match="layer 1 .*mlp.down_proj"):
        down_proj(model, 1)


def test_bad_orientation():
    with pytest.raises(ValueError, match="out_in"):
        write_matrix(nn.Linear(2, 2), "rows")  # type: ignore[arg-type]


def test_output_norms_exist_where_declared(family):
    model = tiny_model(family)
    architecture = architecture_for(model)
    norms = [path for path in (architecture.mlp_output_norm, architecture.attn_output_norm) if path]
    assert bool(norms) == family.startswith("gemma")
    for layer in decoder_layers(model):
        for path in norms:
            layer.get_submodule(path)

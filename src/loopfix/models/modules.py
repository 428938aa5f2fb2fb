"""Find the table's modules inside a loaded model, and view their weights in residual space."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from loopfix.models.architectures import (
    Orientation,
    TokenMixer,
    UnsupportedArchitectureError,
    architecture_for,
)

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = [
    "attn_out_proj",
    "decoder_layers",
    "down_proj",
    "num_layers",
    "oriented",
    "residual_width",
    "token_mixer",
    "write_matrix",
]


def decoder_layers(model: PreTrainedModel) -> list[nn.Module]:
    architecture = architecture_for(model)
    for path in architecture.layers:
        if _has_submodule(model, path):
            layers = model.get_submodule(path)
            if isinstance(layers, nn.ModuleList):
                return list(layers)
    raise UnsupportedArchitectureError(
        f"{type(model).__name__} ({architecture.family}) has none of the decoder-layer paths "
        f"{list(architecture.layers)}; the table does not match this transformers version"
    )


def num_layers(model: PreTrainedModel) -> int:
    return len(decoder_layers(model))


def residual_width(model: PreTrainedModel) -> int:
    architecture = architecture_for(model)
    return int(getattr(model.config.get_text_config(decoder=True), architecture.width_attribute))


def _layer(model: PreTrainedModel, layer_index: int) -> nn.Module:
    layers = decoder_layers(model)
    # Negative indices are refused: a patch must record the one layer it touched.
    if not 0 <= layer_index < len(layers):
        raise IndexError(f"layer index {layer_index} is outside 0..{len(layers) - 1}")
    return layers[layer_index]


def down_proj(model: PreTrainedModel, layer_index: int) -> nn.Module:
    """The MLP down-projection of one layer: its columns are what the MLP can write."""
    architecture = architecture_for(model)
    layer = _layer(model, layer_index)
    try:
        return layer.get_submodule(architecture.down_proj)
    except AttributeError:
        raise UnsupportedArchitectureError(
            f"layer {layer_index} of {type(model).__name__} has no {architecture.down_proj!r}"
        ) from None


def token_mixer(model: PreTrainedModel, layer_index: int) -> TokenMixer:
    """Which kind of token mixer one layer holds (hybrids alternate attention kinds)."""
    architecture = architecture_for(model)
    layer = _layer(model, layer_index)
    present = [mixer for mixer in architecture.mixers if _has_submodule(layer, mixer.out_proj)]
    if len(present) != 1:
        raise UnsupportedArchitectureError(
            f"layer {layer_index} of {type(model).__name__} should hold exactly one of "
            f"{[mixer.out_proj for mixer in architecture.mixers]}, found {len(present)}"
        )
    return present[0]


def attn_out_proj(model: PreTrainedModel, layer_index: int) -> nn.Module:
    """The output projection of one layer's token mixer (o_proj, or out_proj in DeltaNet)."""
    return _layer(model, layer_index).get_submodule(token_mixer(model, layer_index).out_proj)


def write_matrix(module: nn.Module, orientation: Orientation) -> torch.Tensor:
    """The module's weight as a [residual_width, n_inputs] view: column j is what input j writes.

    A detached view of the parameter: editing it edits the model in place, and needs no
    torch.no_grad() because autograd does not track it.
    """
    return oriented(module.get_parameter("weight").detach(), orientation)


def oriented(weight: torch.Tensor, orientation: Orientation) -> torch.Tensor:
    """A weight tensor as its [residual_width, n_inputs] view (shares storage with `weight`)."""
    if orientation == "out_in":
        return weight
    if orientation == "in_out":
        return weight.T
    raise ValueError(f"orientation must be 'out_in' or 'in_out', not {orientation!r}")


def _has_submodule(module: nn.Module, path: str) -> bool:
    try:
        module.get_submodule(path)
    except AttributeError:
        return False
    return True

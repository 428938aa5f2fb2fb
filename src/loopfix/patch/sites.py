"""Edit sites: the projections that write into the residual stream, named as the table knows them.

A site is (layer, kind): `down_proj` is the MLP down-projection, `attn_out` the token mixer's
output projection (o_proj, GPT-2's attn.c_proj, Gated DeltaNet's out_proj). A site resolves to
the parameter's state-dict name and the table's weight orientation, which is what a patch
stores, so applying it never needs the table again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import torch
from torch import nn

from loopfix.models import architecture_for, attn_out_proj, down_proj, write_matrix
from loopfix.models.architectures import Orientation

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = [
    "EditSite",
    "SiteKind",
    "parameter_name",
    "site_module",
    "site_orientation",
    "write_view",
]

SiteKind = Literal["down_proj", "attn_out"]


@dataclass(frozen=True)
class EditSite:
    layer: int
    kind: SiteKind

    def label(self) -> str:
        return f"L{self.layer}.{self.kind}"


def site_module(model: PreTrainedModel, site: EditSite) -> nn.Module:
    if site.kind == "down_proj":
        return down_proj(model, site.layer)
    if site.kind == "attn_out":
        return attn_out_proj(model, site.layer)
    raise ValueError(f"site kind must be 'down_proj' or 'attn_out', not {site.kind!r}")


def parameter_name(model: PreTrainedModel, site: EditSite) -> str:
    """The weight's name in `model.state_dict()` (and so in the saved checkpoint)."""
    weight = site_module(model, site).get_parameter("weight")
    for name, parameter in model.named_parameters(remove_duplicate=False):
        if parameter is weight:
            return name
    raise LookupError(f"{site.label()} weight is not a parameter of {type(model).__name__}")


def site_orientation(model: PreTrainedModel) -> Orientation:
    return architecture_for(model).orientation


def write_view(model: nn.Module, name: str, orientation: Orientation) -> torch.Tensor:
    """The [width, n_inputs] view of a named weight; writing into it edits the model."""
    module_name, _, attribute = name.rpartition(".")
    if attribute != "weight":
        raise ValueError(f"a patch edits weight tensors, not {name!r}")
    return write_matrix(model.get_submodule(module_name), orientation)

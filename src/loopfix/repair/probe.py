"""Activation probes: per-layer residual outputs and edit-site inputs on teacher-forced branches.

Two streaming passes keep memory at O(layers x width) whatever the number of pairs:
1. sums (float64) of each layer's output and of each edit site's input at the read-out states
   (and of the inputs' squares: a neuron's spread, `repair.neurons`);
2. given the directions, each state's projection on its layer's direction (one scalar a state),
   for the separation in standard deviations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from loopfix.models import decoder_layers
from loopfix.patch import EditSite
from loopfix.patch.sites import site_module
from loopfix.repair.batches import ProbeBatch
from loopfix.repair.hooks import hooked, layer_output

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["ClassMeans", "class_means", "projections"]


@dataclass
class ClassMeans:
    """Mean residual output per layer ([layers, width]), mean input of each edit site and its
    variance per input unit."""

    count: int = 0
    residual: torch.Tensor | None = None
    site_inputs: dict[EditSite, torch.Tensor] = field(default_factory=dict)
    site_variances: dict[EditSite, torch.Tensor] = field(default_factory=dict)


@torch.inference_mode()
def class_means(
    model: PreTrainedModel, batches: Sequence[ProbeBatch], sites: Sequence[EditSite]
) -> ClassMeans:
    layers = decoder_layers(model)
    sums: list[torch.Tensor | None] = [None] * len(layers)
    site_sums: dict[EditSite, torch.Tensor] = {}
    site_squares: dict[EditSite, torch.Tensor] = {}
    current: dict[str, ProbeBatch] = {}

    def read(tensor: torch.Tensor) -> torch.Tensor:
        batch = current["batch"]
        return tensor[batch.rows.to(tensor.device), batch.positions.to(tensor.device)].to(
            torch.float64
        )

    def add(into: dict[Any, torch.Tensor], key: Any, total: torch.Tensor) -> None:
        into[key] = total + into[key] if key in into else total

    def layer_hook(index: int) -> Any:
        def hook(module: Any, inputs: Any, output: Any) -> None:
            total, previous = read(layer_output(output)).sum(0).cpu(), sums[index]
            sums[index] = total if previous is None else previous + total

        return hook

    def site_hook(site: EditSite) -> Any:
        def hook(module: Any, inputs: Any) -> None:
            states = read(inputs[0])
            add(site_sums, site, states.sum(0).cpu())
            add(site_squares, site, states.square().sum(0).cpu())

        return hook

    forward = [(layer, layer_hook(i)) for i, layer in enumerate(layers)]
    pre = [(site_module(model, site), site_hook(site)) for site in sites]
    count = 0
    with hooked(forward, pre):
        for batch in batches:
            current["batch"] = batch
            # Only the hooks matter: skip the vocabulary projection but for one position.
            model(input_ids=batch.ids.to(model.device), logits_to_keep=1)
            count += len(batch.rows)
    residual = torch.stack([s for s in sums if s is not None]) / count
    means = {site: s / count for site, s in site_sums.items()}
    variances = {site: site_squares[site] / count - means[site].square() for site in means}
    return ClassMeans(count, residual, means, variances)


@torch.inference_mode()
def projections(
    model: PreTrainedModel, batches: Sequence[ProbeBatch], directions: torch.Tensor
) -> torch.Tensor:
    """[layers, states]: each read-out state's residual output projected on its layer's
    direction (directions: [layers, width])."""
    layers = decoder_layers(model)
    collected: list[list[torch.Tensor]] = [[] for _ in layers]
    current: dict[str, ProbeBatch] = {}

    def layer_hook(index: int) -> Any:
        def hook(module: Any, inputs: Any, output: Any) -> None:
            hidden = layer_output(output)
            batch = current["batch"]
            states = hidden[batch.rows.to(hidden.device), batch.positions.to(hidden.device)]
            u = directions[index].to(hidden.device, torch.float64)
            collected[index].append((states.to(torch.float64) @ u).cpu())

        return hook

    with hooked([(layer, layer_hook(i)) for i, layer in enumerate(layers)]):
        for batch in batches:
            current["batch"] = batch
            # Only the hooks matter: skip the vocabulary projection but for one position.
            model(input_ids=batch.ids.to(model.device), logits_to_keep=1)
    return torch.stack([torch.cat(parts) for parts in collected])

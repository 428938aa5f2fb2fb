"""Neuron edits: the MLP units (the inputs of down_proj) whose activation separates looping from
converging runs, and candidates that flip, silence or scale a few of them.

A unit's separation is (mean at looping states - mean at converging states) / pooled standard
deviation, over the probed states of the same branch pairs the directions are found on
(`probe.class_means`). Candidates: in each of the `search_layers` layers whose strongest unit
separates most, the `count` units of largest |separation|, their down_proj columns scaled by
each of the scales (-1 flips a unit, as in "Can Editing 1 Neuron Fix Repetition Loops?", 0
silences it). A neuron edit's control scales as many units of the same layers, drawn at random
(one draw per control seed), by the same factor.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from loopfix.patch import EditRequest, EditSite
from loopfix.repair.candidates import Candidate
from loopfix.repair.probe import ClassMeans

__all__ = ["neuron_candidate", "neuron_grid", "neuron_separations", "random_neuron_control"]


def neuron_separations(repetitive: ClassMeans, productive: ClassMeans) -> dict[int, torch.Tensor]:
    """Per layer with a probed down_proj, each unit's separation ([units], float64); a unit
    that never varies at the probed states separates by 0."""
    separations = {}
    for site, mean in repetitive.site_inputs.items():
        if site.kind != "down_proj":
            continue
        pooled = (0.5 * (repetitive.site_variances[site] + productive.site_variances[site])).sqrt()
        gap = mean - productive.site_inputs[site]
        separations[site.layer] = torch.where(pooled > 0, gap / pooled, torch.zeros_like(gap))
    return separations


def neuron_candidate(layer: int, units: Sequence[int], scale: float) -> Candidate:
    """Scale the down_proj columns of `units` in `layer` by `scale`."""
    columns = torch.tensor(sorted(units), dtype=torch.int64)
    request = EditRequest(EditSite(layer, "down_proj"), None, columns, scale)
    return Candidate("down_proj", (layer,), len(columns), scale, (request,), edit="neurons")


def neuron_grid(
    separations: dict[int, torch.Tensor],
    search_layers: int,
    counts: Sequence[int],
    scales: Sequence[float],
) -> list[Candidate]:
    """Every count x scale on the `search_layers` layers whose strongest unit separates most."""
    if not separations:
        raise ValueError("a neuron search needs the down_proj site probed (sites: down_proj)")
    strongest = {layer: float(s.abs().max()) for layer, s in separations.items()}
    layers = sorted(strongest, key=lambda layer: -strongest[layer])[:search_layers]
    grid = []
    for layer in layers:
        order = separations[layer].abs().argsort(descending=True).tolist()
        # A count past the layer's units would repeat the edit of all of them.
        for count in sorted({min(count, len(order)) for count in counts}):
            for scale in scales:
                grid.append(neuron_candidate(layer, order[:count], scale))
    return grid


def random_neuron_control(candidate: Candidate, units: int, seed: int) -> Candidate:
    """As many units as `candidate` edits, drawn at random among a layer's `units`, scaled
    alike (the control of a neuron edit: does any few units' change do as much?)."""
    (request,) = candidate.requests
    generator = torch.Generator().manual_seed(seed)
    drawn = torch.randperm(units, generator=generator)[: len(request.columns)].tolist()
    return neuron_candidate(request.site.layer, drawn, candidate.alpha)

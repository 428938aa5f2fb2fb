"""Steps 2 and 3 of `run_repair`: where the loop runs (per-layer directions, what each edit
site writes along them, which MLP units separate) and which edits to try (the grid, first-order or
neuron search), with each edit's controls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from loopfix.models import architecture_for, write_matrix
from loopfix.models.modules import num_layers, residual_width
from loopfix.patch import EditSite, build_patch
from loopfix.patch.edit import write_strength
from loopfix.patch.sites import site_module
from loopfix.repair.batches import ProbeBatch, branch_batches, walk_batches
from loopfix.repair.candidates import (
    Candidate,
    SearchRecord,
    candidate_grid,
    norm_matched_control,
)
from loopfix.repair.config import RepairConfig
from loopfix.repair.directions import (
    LayerDirections,
    layer_directions,
    mean_difference_directions,
    random_directions,
)
from loopfix.repair.linear_proxy import LinearProxy, linear_candidates
from loopfix.repair.neurons import neuron_grid, neuron_separations, random_neuron_control
from loopfix.repair.probe import class_means, projections
from loopfix.repair.scoring import ProxyScore, Scorer
from loopfix.repair.sources import BranchPair
from loopfix.repair.sources.base import SourceInputs

if TYPE_CHECKING:
    from transformers import PreTrainedModel


__all__ = [
    "Found",
    "Searched",
    "SiteContribution",
    "controls",
    "find_directions",
    "proxy_batches",
    "rank_candidates",
    "search",
]


@dataclass(frozen=True)
class SiteContribution:
    """How much of the mean difference along u an edit site writes, and how much of that its
    eight strongest columns write."""

    site: EditSite
    writes_along_u: float
    share_of_top8_columns: float

    def to_json(self) -> dict[str, object]:
        return {
            "layer": self.site.layer,
            "site": self.site.kind,
            "writes_along_u": self.writes_along_u,
            "share_of_top8_columns": self.share_of_top8_columns,
        }


@dataclass(frozen=True)
class Found:
    """Step 2: the directions, what each site writes along them, the controls' directions, and
    each MLP unit's separation by layer (`neurons.neuron_separations`)."""

    directions: LayerDirections
    sites: tuple[SiteContribution, ...]
    random: tuple[torch.Tensor, ...]
    neurons: dict[int, torch.Tensor]

    def to_json(self) -> dict[str, object]:
        """verify.json "directions" (of the units, each layer's largest |separation|)."""
        return {
            "layers": self.directions.to_dict(),
            "sites": [c.to_json() for c in self.sites],
            "strongest_neuron": {str(k): float(v.abs().max()) for k, v in self.neurons.items()},
        }


@dataclass(frozen=True)
class Searched:
    """Step 3: the candidates to screen, best first, and what the search saw."""

    candidates: tuple[Candidate, ...]
    record: SearchRecord


def find_directions(
    model: PreTrainedModel, pairs: list[BranchPair], config: RepairConfig, pad_id: int
) -> Found:
    """Step 2: per-layer directions; per edit site how much of the mean difference along u it
    writes (its inputs' mean difference times each column's u^T W, summed); the controls'
    random directions."""
    sites = [EditSite(layer, kind) for layer in range(num_layers(model)) for kind in config.sites]
    batches = {
        which: branch_batches(pairs, which, config.positions, config.batch_size, pad_id)
        for which in ("repetitive", "productive")
    }
    means = {which: class_means(model, b, sites) for which, b in batches.items()}
    difference = mean_difference_directions(means["repetitive"], means["productive"])
    unit = difference / difference.norm(dim=1, keepdim=True)
    rep = projections(model, batches["repetitive"], unit)
    prod = projections(model, batches["productive"], unit)
    contributions = []
    for site in sites:
        write = write_matrix(site_module(model, site), architecture_for(model).orientation)
        delta = means["repetitive"].site_inputs[site] - means["productive"].site_inputs[site]
        per_column = delta * write_strength(write, unit[site.layer])
        top8 = per_column.abs().topk(min(8, per_column.numel())).values.sum()
        share = float(top8 / per_column.abs().sum())
        contributions.append(SiteContribution(site, float(per_column.sum()), share))
    seeds = range(config.control_seed, config.control_seed + config.control_seeds)
    return Found(
        layer_directions(difference, rep, prod),
        tuple(contributions),
        tuple(random_directions(num_layers(model), residual_width(model), s) for s in seeds),
        neuron_separations(means["repetitive"], means["productive"]),
    )


def controls(
    model: PreTrainedModel, candidate: Candidate, found: Found, config: RepairConfig
) -> tuple[Candidate, ...]:
    """The candidate's random controls, one per control seed: for an edit along directions the
    same sites with random directions, norm-matched; for a neuron edit random units of the same
    layer."""
    if candidate.edit == "direction":
        return tuple(norm_matched_control(model, candidate, r) for r in found.random)
    units = len(found.neurons[candidate.layers[0]])
    seeds = range(config.control_seed, config.control_seed + config.control_seeds)
    return tuple(random_neuron_control(candidate, units, seed) for seed in seeds)


def rank_candidates(
    scored: list[tuple[Candidate, ProxyScore]], max_kl: float
) -> list[tuple[Candidate, ProxyScore]]:
    """Within the KL budget and lowering the repetitive branches first, by selectivity;
    the rest after, by selectivity too (so a report can show why nothing qualified)."""

    def key(item: tuple[Candidate, ProxyScore]) -> tuple[bool, float]:
        score = item[1]
        return (not (score.kl <= max_kl and score.d_rep < 0), -score.selectivity)

    return sorted(scored, key=key)


def proxy_batches(inputs: SourceInputs) -> tuple[list[ProbeBatch], ...]:
    """The held-out pairs' repetitive and productive branches and the normal text, batched as
    the scorer and the first-order proxy read them."""
    config, pad_id = inputs.config, inputs.pad_id
    rep, prod = (
        branch_batches(inputs.heldout, which, config.positions, config.batch_size, pad_id)
        for which in ("repetitive", "productive")
    )
    return rep, prod, walk_batches(inputs.normal, config.batch_size, pad_id, config.kl_positions)


def search(model: PreTrainedModel, inputs: SourceInputs, found: Found) -> Searched:
    """Step 3: the candidates screened by generation, best first, and what the search saw: the
    one place where `config.search` picks the grid, the first-order ranking or the neuron grid
    (scored exactly, as the grid is)."""
    config, directions = inputs.config, found.directions
    rep, prod, normal = proxy_batches(inputs)
    budget = config.max_touched_fraction * sum(p.numel() for p in model.parameters())
    if config.search == "linear":
        sites = [site.site for site in found.sites]
        proxy = LinearProxy.measure(model, rep, prod, directions.vectors, sites)
        candidates, record = linear_candidates(model, directions.vectors, proxy, config, budget)
        return Searched(tuple(candidates), record)
    if config.search == "neuron":
        grid = neuron_grid(
            found.neurons, config.search_layers, config.neuron_counts, config.neuron_scales
        )
    else:
        order = sorted(range(len(directions.separations)), key=lambda i: -directions.separations[i])
        layers = order[: config.search_layers]
        grid = candidate_grid(
            model,
            directions.vectors,
            config.sites,
            layers,
            config.max_layers,
            config.ks,
            config.alphas,
            budget,
        )
    scorer = Scorer(model, rep, prod, normal)
    ranked = rank_candidates(
        [(c, scorer.score(build_patch(model, c.requests))) for c in grid], config.max_kl
    )
    top = tuple(c.shape.to_json() | s.to_dict() for c, s in ranked[:10])
    record = SearchRecord(config.search, len(ranked), top)
    return Searched(tuple(c for c, _ in ranked[: config.verify_top]), record)

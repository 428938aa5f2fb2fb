"""Candidate edits: sites x layer sets x columns per layer x strength, and their controls.

Columns are the k that write most strongly along the layer's direction (largest |u^T W[:, j]|,
Exp 8's rule). The control edits the same sites with a random direction per layer, its own
top-k columns, and a strength chosen so that the weight change has the same Frobenius norm.
Neuron edits (`repair.neurons`) are candidates of the same shape whose requests carry no
direction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Literal

import torch

from loopfix.models import write_matrix
from loopfix.patch import EditRequest, EditSite
from loopfix.patch.edit import top_columns, write_strength
from loopfix.patch.sites import SiteKind, site_module, site_orientation
from loopfix.summaries import FlatRecord

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = [
    "Candidate",
    "EditKind",
    "EditShape",
    "SearchRecord",
    "candidate",
    "candidate_grid",
    "edit_norm",
    "norm_matched_control",
]


# "direction": k columns edited along the layer's direction with strength alpha; "neurons": k
# MLP units per layer whose output columns are scaled by alpha (-1 flips, 0 silences them).
EditKind = Literal["direction", "neurons"]


@dataclass(frozen=True)
class EditShape(FlatRecord):
    """Where and how strongly a candidate edits, without its directions: what verify.json and
    the report name a candidate by (its site, layers, k and alpha, and the kind of edit)."""

    site: SiteKind
    layers: tuple[int, ...]
    k: int
    alpha: float
    edit: EditKind = "direction"

    def label(self) -> str:
        layers = ",".join(map(str, self.layers))
        if self.edit == "neurons":
            return f"{self.site} L{layers} {self.k} neurons x{self.alpha:g}"
        return f"{self.site} L{layers} k{self.k} a{self.alpha:g}"


@dataclass(frozen=True)
class Candidate:
    kind: SiteKind
    layers: tuple[int, ...]
    k: int
    alpha: float
    requests: tuple[EditRequest, ...]
    edit: EditKind = "direction"

    @property
    def shape(self) -> EditShape:
        return EditShape(self.kind, self.layers, self.k, self.alpha, self.edit)

    def label(self) -> str:
        return self.shape.label()

    @property
    def touched(self) -> int:
        """Weights an edit along directions changes: its columns times the direction's width,
        per layer."""
        return sum(
            len(r.columns) * len(r.direction) for r in self.requests if r.direction is not None
        )


@dataclass(frozen=True)
class SearchRecord(FlatRecord):
    """What the search saw: its method, how many candidates it ranked and the ten best (each
    candidate's fields with its proxy scores, as the method names them)."""

    method: str
    candidates: int
    top: tuple[Mapping[str, object], ...]


def _write(model: PreTrainedModel, site: EditSite) -> torch.Tensor:
    return write_matrix(site_module(model, site), site_orientation(model))


def _requests(
    model: PreTrainedModel,
    kind: SiteKind,
    layers: Sequence[int],
    directions: torch.Tensor,
    k: int,
    alpha: float,
) -> tuple[EditRequest, ...]:
    requests = []
    for layer in layers:
        site = EditSite(layer, kind)
        write = _write(model, site)
        columns = top_columns(write, directions[layer], min(k, write.shape[1]))
        requests.append(EditRequest(site, directions[layer], columns, alpha))
    return tuple(requests)


def candidate(
    model: PreTrainedModel,
    directions: torch.Tensor,
    kind: SiteKind,
    layers: Sequence[int],
    k: int,
    alpha: float,
) -> Candidate:
    """One edit: the k columns of each layer in `layers` that write most along its direction."""
    requests = _requests(model, kind, layers, directions, k, alpha)
    return Candidate(kind, tuple(layers), k, alpha, requests)


def layer_sets(layers: Sequence[int], max_layers: int) -> list[tuple[int, ...]]:
    sets: list[tuple[int, ...]] = [(layer,) for layer in layers]
    if max_layers >= 2:
        sets += list(combinations(sorted(layers), 2))
    return sets


def candidate_grid(
    model: PreTrainedModel,
    directions: torch.Tensor,
    kinds: Sequence[SiteKind],
    layers: Sequence[int],
    max_layers: int,
    ks: Sequence[int],
    alphas: Sequence[float],
    max_touched: float,
) -> list[Candidate]:
    """Every combination whose edit touches at most `max_touched` weights."""
    grid = []
    for kind in kinds:
        for layer_set in layer_sets(layers, max_layers):
            for k in ks:
                for alpha in alphas:
                    edit = candidate(model, directions, kind, layer_set, k, alpha)
                    if edit.touched <= max_touched:
                        grid.append(edit)
    return grid


def edit_norm(model: PreTrainedModel, requests: Sequence[EditRequest]) -> float:
    """Frobenius norm of the weight change, over edits: alpha * |u^T W[:, columns]| along a
    direction, |alpha - 1| * |W[:, columns]| for a neuron edit."""
    total = 0.0
    for request in requests:
        write = _write(model, request.site)
        if request.direction is None:
            block = write[:, request.columns].to(torch.float64)
            change = abs(request.alpha - 1) * block.norm()
        else:
            strength = write_strength(write, request.direction)
            change = request.alpha * strength[request.columns].norm()
        total += float(change) ** 2
    return total**0.5


def norm_matched_control(
    model: PreTrainedModel, candidate: Candidate, random_directions: torch.Tensor
) -> Candidate:
    """The same sites and k with random directions, scaled to the candidate's edit norm."""
    base = _requests(model, candidate.kind, candidate.layers, random_directions, candidate.k, 1.0)
    alpha = edit_norm(model, candidate.requests) / edit_norm(model, base)
    requests = tuple(EditRequest(r.site, r.direction, r.columns, alpha) for r in base)
    return Candidate(candidate.kind, candidate.layers, candidate.k, alpha, requests)

"""Per-layer repetition directions: u_l = normalise(mean repetitive - mean productive)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from loopfix.repair.probe import ClassMeans

__all__ = [
    "LayerDirections",
    "layer_directions",
    "mean_difference_directions",
    "random_directions",
    "separation",
]


@dataclass(frozen=True)
class LayerDirections:
    vectors: torch.Tensor  # [layers, width], unit rows, float64
    raw_norms: list[float]  # |mean repetitive - mean productive| per layer
    separations: list[float]  # gap along u in pooled standard deviations, per layer
    cosines: list[list[float]]  # between layers' directions

    def to_dict(self) -> dict[str, object]:
        return {
            "raw_norms": self.raw_norms,
            "separations": self.separations,
            "cosines": self.cosines,
        }


def mean_difference_directions(repetitive: ClassMeans, productive: ClassMeans) -> torch.Tensor:
    assert repetitive.residual is not None and productive.residual is not None
    return repetitive.residual - productive.residual


def separation(rep_projections: torch.Tensor, prod_projections: torch.Tensor) -> list[float]:
    """(mean rep - mean prod) / pooled sd along each layer's direction ([layers, states] in)."""
    pooled = torch.sqrt(0.5 * (rep_projections.var(1) + prod_projections.var(1)))
    gap = rep_projections.mean(1) - prod_projections.mean(1)
    return (gap / pooled).tolist()


def layer_directions(
    difference: torch.Tensor, rep_projections: torch.Tensor, prod_projections: torch.Tensor
) -> LayerDirections:
    norms = difference.norm(dim=1)
    vectors = difference / norms[:, None]
    return LayerDirections(
        vectors=vectors,
        raw_norms=norms.tolist(),
        separations=separation(rep_projections, prod_projections),
        cosines=(vectors @ vectors.T).tolist(),
    )


def random_directions(layers: int, width: int, seed: int) -> torch.Tensor:
    """Unit Gaussian directions, one a layer (the control's directions)."""
    generator = torch.Generator().manual_seed(seed)
    vectors = torch.randn(layers, width, generator=generator, dtype=torch.float64)
    return vectors / vectors.norm(dim=1, keepdim=True)

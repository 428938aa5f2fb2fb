"""The column edits of a [width, n_inputs] write matrix: along a direction, W <- W - alpha * u
(u^T W), or a neuron edit, W <- alpha * W.

Column j of a write matrix is what input unit j writes into the residual stream. The edit along
u removes (alpha = 1) or reverses (alpha > 1) the component along the unit direction u of the
selected columns; the neuron edit scales what those units write (alpha -1 flips their sign, 0
silences them), the same as scaling their activations. Every other column stays bit-identical.
"""

from __future__ import annotations

import torch

__all__ = ["edited_columns", "top_columns", "unit", "write_strength"]


def unit(direction: torch.Tensor) -> torch.Tensor:
    """The direction scaled to unit length (float64, so repeated edits do not drift)."""
    direction = direction.detach().to(torch.float64).flatten()
    norm = direction.norm()
    if not torch.isfinite(norm) or norm == 0:
        raise ValueError("a direction must be finite and non-zero")
    return direction / norm


def write_strength(write: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
    """u^T W: how strongly each input unit writes along the direction ([n_inputs], float64)."""
    return unit(direction).to(write.device) @ write.to(torch.float64)


def top_columns(write: torch.Tensor, direction: torch.Tensor, k: int) -> torch.Tensor:
    """The k columns with the largest |u^T W[:, j]|, sorted ascending (int64)."""
    if not 0 < k <= write.shape[1]:
        raise ValueError(f"k must be in 1..{write.shape[1]}, not {k}")
    strength = write_strength(write, direction).abs()
    return torch.sort(torch.topk(strength, k).indices).values.cpu()


def edited_columns(
    write: torch.Tensor, direction: torch.Tensor | None, columns: torch.Tensor, alpha: float
) -> torch.Tensor:
    """New values of W[:, columns] after the edit (along `direction`; None: the neuron edit),
    in the write matrix's dtype and device.

    Computed in float64 and rounded once, so the same inputs give the same bits anywhere.
    """
    block = write[:, columns.to(write.device)].to(torch.float64)
    if direction is None:
        return (alpha * block).to(write.dtype)
    u = unit(direction).to(write.device)
    block = block - alpha * torch.outer(u, u @ block)
    return block.to(write.dtype)

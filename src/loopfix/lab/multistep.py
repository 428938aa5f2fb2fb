"""Multi-step prediction heads (seed 001, 4.2: "predict the next k steps in parallel, to avoid
local optima"): in training, head j (j = 1 .. n) reads the final (normed) hidden state at each
position and predicts the token j + 1 ahead through the model's own (tied) output layer; its
cross-entropy, weighted `HEAD_WEIGHT`, joins the next-token loss. The heads live outside the
model and are not saved: inference is the plain next-token model.
"""

from __future__ import annotations

import torch

__all__ = ["HEAD_WEIGHT", "MultiStepHeads", "ahead_targets"]

HEAD_WEIGHT = 0.5


def ahead_targets(labels: torch.Tensor, offset: int) -> torch.Tensor:
    """At position t the label at t + offset (-100, no loss, where that runs past the end).
    The next-token loss is offset 1."""
    targets = torch.full_like(labels, -100)
    targets[:, :-offset] = labels[:, offset:]
    return targets


class MultiStepHeads(torch.nn.Module):
    """n heads, one linear map of the hidden state each (identity at the start, so each begins
    as the next-token prediction and learns its offset)."""

    def __init__(self, hidden_size: int, heads: int) -> None:
        super().__init__()
        maps = [torch.nn.Linear(hidden_size, hidden_size) for _ in range(heads)]
        for layer in maps:
            torch.nn.init.eye_(layer.weight)
            torch.nn.init.zeros_(layer.bias)
        self.maps = torch.nn.ModuleList(maps)

    def loss(
        self, hidden: torch.Tensor, output_layer: torch.nn.Module, labels: torch.Tensor
    ) -> torch.Tensor:
        """HEAD_WEIGHT x the sum over heads of head j's cross-entropy on the token j + 1 ahead,
        summed over positions (the trainer divides every loss term by the batch's next-token
        targets, so a batch computed in parts adds up to the whole)."""
        total = hidden.new_zeros(())
        for index, layer in enumerate(self.maps):
            logits = output_layer(layer(hidden)).float()
            targets = ahead_targets(labels, index + 2)
            total = total + torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), targets.flatten(), ignore_index=-100, reduction="sum"
            )
        return HEAD_WEIGHT * total

    def flops_parameters(self, output_layer: torch.nn.Module) -> int:
        """Parameters each token passes through in the heads: their maps and, once per head,
        the output layer (tied to the embedding, so not among the model's extra parameters)."""
        output = sum(p.numel() for p in output_layer.parameters())
        return sum(p.numel() for p in self.parameters()) + len(self.maps) * output

"""Cached prefixes: score an edit at layer l by re-running only layers l.. on stored inputs.

An edit to layer l's down_proj or o_proj changes nothing before layer l's output, so the input
to layer l is captured once per batch and, while scoring, the layers in front of it are swapped
for a module that returns the stored tensor (the embedding and masks are still built; they are
cheap). Bounded memory: one [batch, length, width] tensor per batch and start layer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from loopfix.models import architecture_for
from loopfix.repair.batches import ProbeBatch
from loopfix.repair.hooks import hooked, layer_output

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["PrefixCache", "layer_list", "readout_logprobs"]


def layer_list(model: PreTrainedModel) -> nn.ModuleList:
    for path in architecture_for(model).layers:
        try:
            layers = model.get_submodule(path)
        except AttributeError:
            continue
        if isinstance(layers, nn.ModuleList):
            return layers
    raise LookupError(f"no decoder-layer list in {type(model).__name__}")


class _Replay(nn.Module):
    """Stands in for the layers before `start`: returns the stored input of layer `start`."""

    def __init__(self, hidden: torch.Tensor, as_tuple: bool) -> None:
        super().__init__()
        self.hidden, self.as_tuple = hidden, as_tuple

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return (self.hidden,) if self.as_tuple else self.hidden


class PrefixCache:
    """Inputs of layer `start` for each batch, captured from the unedited model."""

    @torch.inference_mode()
    def __init__(self, model: PreTrainedModel, batches: Sequence[ProbeBatch], start: int) -> None:
        self.start = start
        self.hidden: list[torch.Tensor] = []
        self.as_tuple = False
        if start == 0:
            return
        layers = layer_list(model)

        def hook(module: Any, inputs: Any, output: Any) -> None:
            self.as_tuple = isinstance(output, tuple)
            self.hidden.append(layer_output(output).detach().clone())

        with hooked([(layers[start - 1], hook)]):
            for batch in batches:
                model(input_ids=batch.ids.to(model.device), logits_to_keep=1)

    @contextmanager
    def replaying(self, model: PreTrainedModel, index: int) -> Iterator[None]:
        """Run the body's forward pass of batch `index` from layer `start` on."""
        if self.start == 0:
            yield
            return
        layers = layer_list(model)
        originals = [layers[i] for i in range(self.start)]
        try:
            for i in range(self.start):
                layers[i] = _Replay(self.hidden[index], self.as_tuple)
            yield
        finally:
            for i, layer in enumerate(originals):
                layers[i] = layer


def _forward(model: PreTrainedModel, batch: ProbeBatch) -> torch.Tensor:
    """Logits at the read-out states only: the vocabulary projection is the largest tensor of a
    forward pass, so it is computed for the positions some row reads, not all of them."""
    keep = torch.unique(batch.positions)  # sorted
    logits = model(input_ids=batch.ids.to(model.device), logits_to_keep=keep.to(model.device))
    columns = torch.searchsorted(keep, batch.positions)
    return logits.logits[batch.rows.to(model.device), columns.to(model.device)]


@torch.inference_mode()
def readout_logprobs(
    model: PreTrainedModel, batches: Sequence[ProbeBatch], cache: PrefixCache | None = None
) -> list[torch.Tensor]:
    """Per batch, [states, vocab] log-probabilities (float32) at the read-out states."""
    results = []
    for index, batch in enumerate(batches):
        if cache is None:
            states = _forward(model, batch)
        else:
            with cache.replaying(model, index):
                states = _forward(model, batch)
        results.append(torch.log_softmax(states.float(), -1).cpu())
    return results

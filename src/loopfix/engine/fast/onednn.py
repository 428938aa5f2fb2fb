"""Linear layers through oneDNN on pre-packed weights, for CPU inference.

torch runs a float32 `nn.Linear` on CPU through MKL's sgemm, and a bfloat16 one through oneDNN
on the plain weight, which oneDNN reorders into its blocked layout on every call. On the AMD
EPYC machines this project runs on, at the decode engine's shapes (16 rows x SmolLM2's 576-1536
wide projections and its 49,152-wide output layer, one thread, `bench/bench_real_model.py
--matmul`), oneDNN on a weight packed once into its own layout is the fastest of the three in
both dtypes: a decode step is mostly these matrix multiplies, streaming every weight from
memory, and vLLM-CPU runs them on oneDNN with packed weights too.

`accelerate(model)` switches a model's plain `nn.Linear` layers to `OneDNNLinear` for as long as
its handle is held (`remove()`, or `with accelerate(model): ...`), then switches them back: the
decode engine holds one only around its own calls of the model's forward, so between them,
and after, the model is exactly the one it was given (every module's class, every parameter
the same tensor; nothing is stored on the modules). Handles on one model nest and may be held
from several threads: the first switches, the last to go switches back. A switch that fails
halfway is undone before the error propagates.

Whenever no gradient is wanted, on CPU, in float32 (or bfloat16 where oneDNN supports it),
`OneDNNLinear` calls oneDNN's linear on a packed copy of its weight; otherwise it is
`nn.Linear` itself. The packed copy lives in a cache beside the model (`packed_weight`: keyed
weakly on the module, so it goes with the model), so holding a handle again costs one class
assignment per layer, not a packing. It costs the weight's memory again, is made on first
use, and is made afresh whenever the weight changed since: its version counter moves on every
in-place write through the parameter or a detached view of it (a patch, `load_state_dict`),
its identity and storage when the parameter is replaced. A write through `weight.data` moves
none of them and is not seen. Same math, another summation order than MKL: logits differ in
the last float bits, so a greedy walk may part at a near-tie.
"""

from __future__ import annotations

import functools
import threading
import weakref
from types import TracebackType

import torch
from torch import nn

__all__ = [
    "Accelerated",
    "OneDNNLinear",
    "PackedWeight",
    "accelerate",
    "onednn_available",
    "packable",
    "packed_weight",
]


@functools.cache
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
    since: each is keyed by its identity, version counter and storage (see the module docstring)."""

    def __init__(self) -> None:
        self._key: tuple[tuple[int, int, int], ...] | None = None
        self._packed = torch.zeros(0)

    def get(self, *weights: torch.Tensor) -> torch.Tensor:
        key = tuple((id(w), w._version, w.data_ptr()) for w in weights)
        if self._key != key:
            stacked = weights[0] if len(weights) == 1 else torch.cat(weights)
            self._packed = torch.ops.mkldnn._reorder_linear_weight(stacked.detach())
            self._key = key
        return self._packed


_PACKED: weakref.WeakKeyDictionary[nn.Module, PackedWeight] = weakref.WeakKeyDictionary()


def packed_weight(linear: nn.Linear) -> torch.Tensor:
    """`linear`'s weight in oneDNN's layout, from the cache beside the model (packed again if
    the weight changed since); the fused forward's single projections share it."""
    packed = _PACKED.get(linear)
    if packed is None:
        packed = _PACKED[linear] = PackedWeight()
    return packed.get(linear.weight)


class OneDNNLinear(nn.Linear):
    """`nn.Linear` whose CPU inference runs on oneDNN with a packed weight, while an
    `accelerate` handle holds its model (see the module docstring)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not packable(input, self.weight):
            return super().forward(input)
        return self.forward_on_weights(input, packed_weight(self), self.bias)

    @staticmethod
    def forward_on_weights(
        input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        """oneDNN's `input @ weight.T + bias` (CPU; `weight` plain or packed)."""
        return torch.ops.mkldnn._linear_pointwise(input, weight, bias, "none", [], "")


class _Switch:
    """The layers one model had switched, and how many handles hold them so."""

    def __init__(self, layers: list[nn.Module]) -> None:
        self.layers, self.holders = layers, 1


_LOCK = threading.Lock()
_SWITCHED: weakref.WeakKeyDictionary[nn.Module, _Switch] = weakref.WeakKeyDictionary()


def _switch_back(layers: list[nn.Module]) -> None:
    for layer in reversed(layers):
        if type(layer) is OneDNNLinear:  # a class someone else set since is theirs to keep
            object.__setattr__(layer, "__class__", nn.Linear)  # past Module.__setattr__


class Accelerated:
    """A hold on a model's switched linear layers (`accelerate`): `remove()` lets go (the
    last hold on the model switches them back); also a context manager. Removing twice is a
    no-op."""

    def __init__(self, model: nn.Module | None) -> None:
        self._model = model

    @property
    def layers(self) -> int:
        """How many layers this model has switched while held (0: oneDNN missing, released)."""
        switch = _SWITCHED.get(self._model) if self._model is not None else None
        return len(switch.layers) if switch is not None else 0

    def remove(self) -> None:
        model, self._model = self._model, None
        if model is None:
            return
        with _LOCK:
            switch = _SWITCHED.get(model)
            if switch is None:
                return
            switch.holders -= 1
            if not switch.holders:
                del _SWITCHED[model]
                _switch_back(switch.layers)

    def __enter__(self) -> Accelerated:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.remove()


def accelerate(model: nn.Module) -> Accelerated:
    """Run `model`'s plain `nn.Linear` layers on oneDNN with packed weights until the handle
    is removed (parameters, hooks and state dict untouched; see the module docstring). Does
    nothing, and returns a handle that does nothing, when oneDNN is missing."""
    if not onednn_available():
        return Accelerated(None)
    with _LOCK:
        switch = _SWITCHED.get(model)
        if switch is not None:
            switch.holders += 1
            return Accelerated(model)
        layers: list[nn.Module] = []
        try:
            for module in model.modules():
                if type(module) is nn.Linear:
                    object.__setattr__(module, "__class__", OneDNNLinear)
                    layers.append(module)
        except BaseException:
            _switch_back(layers)
            raise
        _SWITCHED[model] = _Switch(layers)
    return Accelerated(model)

"""`LlamaFused`: a Llama-architecture model's prefill and decode steps, as transformers
computes them, in fewer calls.

Profiled on SmolLM2 in bfloat16 at the engine's batch of 16 (`bench/bench_real_model.py
--profile bfloat16`), a fifth of each decode step was Python outside any operator -
transformers' module calls, keyword plumbing and mask construction - and another tenth went to
small elementwise operators. This runs the same math with the decoder layers' parameters and
the engine's own cache: q, k and v as one matrix multiply (their weights stacked), gate and up
as one, every linear layer on oneDNN with packed weights (`fast.onednn`; the stacked copies
are packed again whenever a weight changes, a repair patch say, like every packed weight).

Between the matrix multiplies, one of two sets of operations (`LayerOps`):
- the compiled kernels (`fast.decode_kernels`; bfloat16 and float32, where a C compiler
  builds them): a layer's rotary embedding, cache append and attention in one call, the
  residual add and RMSNorm in another, the MLP activation in a third (`KernelOps`). They also
  serve the prefill (`PackedKernelOps`): the prompts packed one after another, no padding
  tokens computed, each attending causally to its own tokens, its keys and values written
  left-padded into the cache as the engine keeps it. Their attention sums in another order
  than torch's flash kernel, so the logits agree with transformers' to float rounding, not bit
  for bit: on SmolLM2, fed the model's own greedy tokens, as closely as transformers' eager
  attention agrees with its sdpa (`bench/bench_real_model.py --fused-check`; docs/
  real-model.md).
- torch's operators otherwise (`TorchOps`; float16, or no compiler), for decode steps only:
  the rotary embedding on queries and keys together, the query heads packed onto their
  key/value heads (transformers' `pack_gqa`), sdpa; transformers' math, the logits bit for bit
  its own on SmolLM2 in float32 and bfloat16.

It serves a model only while transformers' forward would run the same computation: a plain
`LlamaForCausalLM` on CPU with sdpa attention, the default MLP activation, no tensor-parallel
split, and no forward hooks or pre-hooks anywhere (the repair's causal check generates with
hooks on `o_proj` / `down_proj`, and they must see their module run). Otherwise `supported` says
no and the engine calls the model. Another CPU's kernels may round a stacked multiply
differently, so the tests compare to float rounding (`tests/backends/test_fast_paths.py`).
"""

from __future__ import annotations

import math
import weakref
from typing import Any, NamedTuple, Protocol, cast

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as torch_module
from transformers import PretrainedConfig, PreTrainedModel

from loopfix.engine.fast.decode_kernels import DecodeKernels, PackedRows, decode_kernels
from loopfix.engine.fast.onednn import OneDNNLinear, PackedWeight, packable, packed_weight

__all__ = [
    "KernelOps",
    "LayerOps",
    "LlamaFused",
    "PackedKernelOps",
    "TorchOps",
    "fused_forward",
    "kernels_for",
    "serves",
]

_FUSED: weakref.WeakKeyDictionary[nn.Module, LlamaFused | None] = weakref.WeakKeyDictionary()


def _no_hooks(modules: list[nn.Module]) -> bool:
    if torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks:
        return False
    return not any(m._forward_hooks or m._forward_pre_hooks for m in modules)


class _Projection:
    """Linear layers sharing an input, run as one matrix multiply on their stacked weights."""

    def __init__(self, linears: list[nn.Linear]) -> None:
        self.linears = linears
        self.packed = PackedWeight()  # the stacked weights' (one layer: `packed_weight`'s)

    def __call__(self, x: torch.Tensor, pack: bool) -> torch.Tensor:
        """`x` through the stacked layers; `pack`: on oneDNN's packed weight (`packable`)."""
        # Read from the modules at every call: a parameter may be replaced, not only edited.
        if not pack:  # stacking unpacked weights would copy them every step; outputs are small
            outputs = [F.linear(x, linear.weight, linear.bias) for linear in self.linears]
            return outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=-1)
        bias = None
        if self.linears[0].bias is not None:
            bias = torch.cat([cast(torch.Tensor, linear.bias) for linear in self.linears])
        if len(self.linears) == 1:  # the packed copy the model's own forward would use
            weight = packed_weight(self.linears[0])
        else:
            weight = self.packed.get(*[linear.weight for linear in self.linears])
        return OneDNNLinear.forward_on_weights(x, weight, bias)


def _rms_norm(x: torch.Tensor, norm: nn.Module) -> torch.Tensor:
    # transformers' LlamaRMSNorm: statistics in float32, x normalized and rounded to its dtype,
    # then the weight applied in that dtype. torch's fused kernel accumulates half-precision
    # input in float32 and rounds once: bit for bit the same values, in one call.
    epsilon = float(cast(float, norm.variance_epsilon))
    return cast(torch.Tensor, norm.weight) * torch.rms_norm(x, x.shape[-1:], None, epsilon)


def _additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """The padding mask as sdpa applies it, (rows, 1, 1, positions): 0 where a row attends,
    -inf elsewhere. sdpa turns a boolean mask into this in every layer; here once per step.
    None without padding: transformers then passes no mask."""
    if bool(mask.all()):
        return None
    additive = torch.zeros(mask.shape, dtype=dtype).masked_fill_(mask == 0, -math.inf)
    return additive[:, None, None, :]


def _rotary(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """transformers' `x * cos + rotate_half(x) * sin`, where rotate_half(x) = (-x2, x1) is the
    halves swapped (one flip) times the signs that `signed_sin` carries: the same products."""
    halves = x.unflatten(-1, (2, -1))
    return x * cos + halves.flip(-2).flatten(-2) * signed_sin


class _Layer(NamedTuple):
    """One decoder layer's parts, in the order the step uses them."""

    input_norm: nn.Module
    qkv: _Projection
    scaling: float
    out: _Projection
    post_norm: nn.Module
    gate_up: _Projection
    down: _Projection
    next_norm: nn.Module  # the next layer's input norm; the final norm after the last layer


class _Shape(NamedTuple):
    rows: int
    heads: int
    kv_heads: int
    head_dim: int


class TorchOps:
    """A decode step's attention, norms and activation on torch's operators: transformers'
    math, bit for bit."""

    def __init__(self, shape: _Shape, mask: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        self.shape, self.cos = shape, cos
        half = shape.head_dim // 2
        self.signed_sin = torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)
        self.additive = _additive_mask(mask, cos.dtype)

    def add_norm(
        self, hidden: torch.Tensor, delta: torch.Tensor | None, norm: nn.Module
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if delta is not None:
            hidden = hidden + delta
        return hidden, _rms_norm(hidden, norm)

    def silu_mul(self, gate_up: torch.Tensor) -> torch.Tensor:
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate).mul_(up)

    def attend(self, states: torch.Tensor, cache_layer: Any, scaling: float) -> torch.Tensor:
        rows, heads, kv_heads, head_dim = self.shape
        states = states.view(rows, heads + 2 * kv_heads, head_dim)
        rotated = _rotary(states[:, : heads + kv_heads], self.cos, self.signed_sin)
        query, key = rotated[:, :heads], rotated[:, heads:]
        value = states[:, heads + kv_heads :]
        keys, values = cache_layer.update(key[:, :, None], value[:, :, None])
        if self.additive is None:  # no padding: transformers runs sdpa on the grouped heads
            context = F.scaled_dot_product_attention(
                query[:, :, None], keys, values, scale=scaling, enable_gqa=True
            )
        else:  # transformers' pack_gqa: a kv head's query heads as its query positions
            query = query.reshape(rows, kv_heads, heads // kv_heads, head_dim)
            context = F.scaled_dot_product_attention(
                query, keys, values, attn_mask=self.additive, scale=scaling
            )
        return context.reshape(rows, heads * head_dim)


class LayerOps(Protocol):
    """What a decoder layer needs between its matrix multiplies."""

    def add_norm(
        self, hidden: torch.Tensor, delta: torch.Tensor | None, norm: nn.Module
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(hidden + delta, its normalized form); no delta: hidden as it is."""
        ...

    def silu_mul(self, gate_up: torch.Tensor) -> torch.Tensor: ...

    def attend(self, states: torch.Tensor, cache_layer: Any, scaling: float) -> torch.Tensor:
        """The layer's attention output from its q/k/v projections, the cache updated."""
        ...


class _CompiledOps:
    """The norms and activation on the compiled kernels (`decode_kernels`), the residual stream
    updated in place; `cos`/`sin` are the rotary angles, one row per token."""

    def __init__(self, kernels: DecodeKernels, cos: torch.Tensor, sin: torch.Tensor) -> None:
        self.kernels = kernels
        self.cos, self.sin = cos.flatten(0, -2).contiguous(), sin.flatten(0, -2).contiguous()

    def add_norm(
        self, hidden: torch.Tensor, delta: torch.Tensor | None, norm: nn.Module
    ) -> tuple[torch.Tensor, torch.Tensor]:
        epsilon = float(cast(float, norm.variance_epsilon))
        weight = cast(torch.Tensor, norm.weight)
        return hidden, self.kernels.rms_norm(hidden, weight, epsilon, delta)

    def silu_mul(self, gate_up: torch.Tensor) -> torch.Tensor:
        return self.kernels.silu_mul(gate_up)


class KernelOps(_CompiledOps):
    """A decode step on the compiled kernels: rotary embedding, cache append and attention in
    one call per layer; `mask` is the rows' padding mask."""

    def __init__(
        self, kernels: DecodeKernels, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor
    ) -> None:
        super().__init__(kernels, cos, sin)
        self.mask = mask

    def attend(self, states: torch.Tensor, cache_layer: Any, scaling: float) -> torch.Tensor:
        buffers = cache_layer.append_slot()
        return self.kernels.attend(states, self.cos, self.sin, buffers, self.mask, scaling)


class PackedKernelOps(_CompiledOps):
    """A prefill of prompts packed one after another (`packed`) on the compiled kernels, into
    a cache of `shape`'s rows and heads."""

    def __init__(
        self,
        kernels: DecodeKernels,
        cos: torch.Tensor,
        sin: torch.Tensor,
        packed: PackedRows,
        shape: _Shape,
    ) -> None:
        super().__init__(kernels, cos, sin)
        self.packed, self.shape = packed, shape

    def attend(self, states: torch.Tensor, cache_layer: Any, scaling: float) -> torch.Tensor:
        rows, _, kv_heads, head_dim = self.shape
        zeros = cache_layer.hold_zeros(rows, kv_heads, self.packed.width, head_dim, states)
        return self.kernels.prefill_attend(states, self.cos, self.sin, zeros, self.packed, scaling)


class LlamaFused:
    """Prefill and decode steps of one model (see the module docstring); `supported` first.
    `use_kernels`: run on the compiled kernels where they build (False: torch's operators,
    decode steps only)."""

    def __init__(self, model: PreTrainedModel) -> None:
        self.model = model
        self.use_kernels = True
        self._modules = list(model.modules())
        self._layers: list[_Layer] = []
        if self._architecture_fits():
            layers = model.model.layers
            next_norms = [layer.input_layernorm for layer in layers[1:]] + [model.model.norm]
            for layer, next_norm in zip(layers, next_norms, strict=True):
                attention, mlp = layer.self_attn, layer.mlp
                self._layers.append(
                    _Layer(
                        layer.input_layernorm,
                        _Projection([attention.q_proj, attention.k_proj, attention.v_proj]),
                        attention.scaling,
                        _Projection([attention.o_proj]),
                        layer.post_attention_layernorm,
                        _Projection([mlp.gate_proj, mlp.up_proj]),
                        _Projection([mlp.down_proj]),
                        next_norm,
                    )
                )
            self._head = _Projection([model.lm_head])
            config = model.config
            self._heads, self._kv_heads = config.num_attention_heads, config.num_key_value_heads
            self._head_dim = _head_dim(config)

    def _architecture_fits(self) -> bool:
        return (
            type(self.model).__name__ == "LlamaForCausalLM"
            and serves(self.model.config)
            and self.model.config._attn_implementation == "sdpa"
            and self.model.device.type == "cpu"
        )

    def supported(self) -> bool:
        """Whether the decode step computes what the model's forward would, now."""
        return bool(self._layers) and not self.model.training and _no_hooks(self._modules)

    def kernels(self) -> DecodeKernels | None:
        """The compiled kernels for the model's shape and dtype, when in use and built."""
        if not self.use_kernels:
            return None
        return kernels_for(self.model.config, self.model.lm_head.weight.dtype)

    def _shape(self, rows: int) -> _Shape:
        return _Shape(rows, self._heads, self._kv_heads, self._head_dim)

    def _layers_forward(
        self, hidden: torch.Tensor, ops: LayerOps, cache: Any, state_layer: int | None = None
    ) -> tuple[torch.Tensor, bool, torch.Tensor | None]:
        """The decoder layers on `hidden` (tokens, width), then the final norm; whether the
        projections ran on packed weights; and the hidden state `state_layer` as
        `output_hidden_states` numbers them (0 the embeddings, i the output of decoder layer i,
        the last one after the final norm), None when not asked for."""
        pack = packable(hidden, self.model.lm_head.weight)  # one dtype and device for all
        state = hidden.clone() if state_layer == 0 else None
        hidden, normed = ops.add_norm(hidden, None, self._layers[0].input_norm)
        for number, (layer, cache_layer) in enumerate(zip(self._layers, cache.layers, strict=True)):
            context = ops.attend(layer.qkv(normed, pack), cache_layer, layer.scaling)
            hidden, normed = ops.add_norm(hidden, layer.out(context, pack), layer.post_norm)
            activation = ops.silu_mul(layer.gate_up(normed, pack))
            hidden, normed = ops.add_norm(hidden, layer.down(activation, pack), layer.next_norm)
            if state_layer == number + 1 < len(self._layers):
                state = hidden.clone()  # the next layer's add_norm may write it in place
        if state_layer == len(self._layers):
            state = normed
        return normed, pack, state

    @torch.inference_mode()
    def step(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor,
        cache: Any,
        state_layer: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Next-token logits (rows, vocabulary) for `ids` (rows, 1) at `positions` (rows, 1),
        the engine's 2-d padding mask (rows, cached + 1) and its cache of `SpareLayer`s, which
        receives this token's keys and values; and the hidden state `state_layer` (rows,
        width) of `_layers_forward`."""
        inner = self.model.model
        hidden = inner.embed_tokens(ids)[:, 0].contiguous()
        cos, sin = inner.rotary_emb(hidden, positions)  # (rows, 1, head_dim), one per row
        kernels = self.kernels()
        ops: LayerOps
        if kernels is None:
            ops = TorchOps(self._shape(ids.shape[0]), mask, cos, sin)
        else:
            ops = KernelOps(kernels, cos, sin, mask)
        normed, pack, state = self._layers_forward(hidden, ops, cache, state_layer)
        return self._head(normed, pack), state

    def packs(self, mask: torch.Tensor) -> bool:
        """Whether `prefill` serves a batch with this padding mask: the decode step is
        supported, the kernels are built, and every row has a token."""
        return self.supported() and self.kernels() is not None and bool(mask.any(dim=1).all())

    @torch.inference_mode()
    def prefill(
        self, ids: torch.Tensor, mask: torch.Tensor, cache: Any, state_layer: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Next-token logits (rows, vocabulary) after each row of the left-padded batch `ids`
        (rows, width; `mask` 1 on its tokens), run packed on the compiled kernels (`packs`
        first); the keys and values go into `cache`'s `SpareLayer`s in the same left-padded
        layout (padding positions hold zeros). With `state_layer`, also each row's last hidden
        state there (`_layers_forward`)."""
        kernels = self.kernels()
        if kernels is None:
            raise RuntimeError("the fused prefill runs on the compiled kernels only")
        inner = self.model.model
        packed = PackedRows.of(mask)
        hidden = inner.embed_tokens(ids[mask.bool()])
        cos, sin = inner.rotary_emb(hidden, packed.positions[None])
        ops = PackedKernelOps(kernels, cos, sin, packed, self._shape(len(packed.lengths)))
        normed, pack, state = self._layers_forward(hidden, ops, cache, state_layer)
        last = torch.cumsum(packed.lengths, dim=0) - 1
        return self._head(normed[last], pack), None if state is None else state[last]


def serves(config: PretrainedConfig) -> bool:
    """Whether the fused forward computes what a model of this config does: a plain Llama
    (silu MLP, no tensor-parallel split), once loaded on CPU with sdpa attention."""
    return (
        config.model_type == "llama"
        and getattr(config, "hidden_act", None) == "silu"
        and getattr(config, "pretraining_tp", 1) == 1
    )


def _head_dim(config: PretrainedConfig) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def kernels_for(config: PretrainedConfig, dtype: torch.dtype) -> DecodeKernels | None:
    """The compiled kernels for a Llama config's attention shape in `dtype`, where they build."""
    group = config.num_attention_heads // config.num_key_value_heads
    return decode_kernels(_head_dim(config), group, dtype)


def fused_forward(model: PreTrainedModel) -> LlamaFused | None:
    """The model's fused forward (one per model, so that its packed weights are packed once
    for every engine and batch on it); None for an architecture it does not serve."""
    if model not in _FUSED:
        fused = LlamaFused(model)
        _FUSED[model] = fused if fused._layers else None
    return _FUSED[model]

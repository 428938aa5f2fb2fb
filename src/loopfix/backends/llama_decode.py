"""`LlamaDecodeStep`: one decode step (a single new token per row) of a Llama-architecture
model, as transformers computes it, in fewer calls.

Profiled on SmolLM2 in bfloat16 at the engine's batch of 16 (`bench/bench_real_model.py
--profile bfloat16`), a fifth of each decode step was Python outside any operator -
transformers' module calls, keyword plumbing and mask construction - and another tenth went to
small elementwise operators. This step runs the same math with the decoder layers' parameters
and the engine's own cache: q, k and v as one matrix multiply (their weights stacked), gate and
up as one, the rotary embedding applied to queries and keys together, the query heads packed
onto their key/value heads for a single query position (transformers' `pack_gqa`), and the
linear layers on oneDNN with packed weights (`backends.onednn`). The stacked copies are packed
again whenever a weight changes (a repair patch), like every packed weight.

It serves a model only while transformers' forward would run the same computation: a plain
`LlamaForCausalLM` on CPU with sdpa attention, the default MLP activation, no tensor-parallel
split, and no forward hooks or pre-hooks anywhere (the repair's causal check generates with
hooks on `o_proj` / `down_proj`, and they must see their module run). Otherwise `supported` says
no and the engine calls the model. Same math, another grouping of the matrix multiplies: on
SmolLM2 the logits are bit for bit transformers' in float32 and bfloat16 (`bench/
bench_real_model.py --fused-check`); another CPU's kernels may round a stacked multiply
differently, so the tests compare to float rounding (`tests/backends/test_fast_paths.py`).
"""

from __future__ import annotations

import math
import weakref
from typing import Any, NamedTuple, cast

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as torch_module
from transformers import PreTrainedModel

from loopfix.backends.onednn import OneDNNLinear, PackedWeight, packable

__all__ = ["LlamaDecodeStep", "decode_step"]

_STEPS: weakref.WeakKeyDictionary[nn.Module, LlamaDecodeStep | None] = weakref.WeakKeyDictionary()


def _no_hooks(modules: list[nn.Module]) -> bool:
    if torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks:
        return False
    return not any(m._forward_hooks or m._forward_pre_hooks for m in modules)


class _Projection:
    """Linear layers sharing an input, run as one matrix multiply on their stacked weights."""

    def __init__(self, linears: list[nn.Linear]) -> None:
        self.linears = linears
        self.packed = PackedWeight()

    def __call__(self, x: torch.Tensor, pack: bool) -> torch.Tensor:
        """`x` through the stacked layers; `pack`: on oneDNN's packed weight (`packable`)."""
        # Read from the modules at every call: a parameter may be replaced, not only edited.
        if not pack:  # stacking unpacked weights would copy them every step; outputs are small
            outputs = [F.linear(x, linear.weight, linear.bias) for linear in self.linears]
            return outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=-1)
        bias = None
        if self.linears[0].bias is not None:
            bias = torch.cat([cast(torch.Tensor, linear.bias) for linear in self.linears])
        weights = [linear.weight for linear in self.linears]
        return OneDNNLinear.forward_on_weights(x, self.packed.get(*weights), bias)


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


class LlamaDecodeStep:
    """Decode steps of one model (see the module docstring); `supported` first, then call."""

    def __init__(self, model: PreTrainedModel) -> None:
        self.model = model
        self._modules = list(model.modules())
        self._layers: list[_Layer] = []
        if self._architecture_fits():
            for layer in model.model.layers:
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
                    )
                )
            self._head = _Projection([model.lm_head])

    def _architecture_fits(self) -> bool:
        config = self.model.config
        return (
            type(self.model).__name__ == "LlamaForCausalLM"
            and config._attn_implementation == "sdpa"
            and config.hidden_act == "silu"
            and getattr(config, "pretraining_tp", 1) == 1
            and self.model.device.type == "cpu"
        )

    def supported(self) -> bool:
        """Whether this step computes what the model's forward would, now."""
        return bool(self._layers) and not self.model.training and _no_hooks(self._modules)

    @torch.inference_mode()
    def __call__(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any
    ) -> torch.Tensor:
        """Next-token logits (rows, vocabulary) for `ids` (rows, 1) at `positions` (rows, 1),
        the engine's 2-d padding mask (rows, cached + 1) and its cache of `SpareLayer`s, which
        receives this token's keys and values."""
        config, inner = self.model.config, self.model.model
        rows = ids.shape[0]
        heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        hidden = inner.embed_tokens(ids)[:, 0]
        cos, sin = inner.rotary_emb(hidden, positions)  # (rows, 1, head_dim), one per row
        signed_sin = torch.cat((-sin[..., : head_dim // 2], sin[..., head_dim // 2 :]), dim=-1)
        additive = _additive_mask(mask, hidden.dtype)
        pack = packable(hidden, self.model.lm_head.weight)  # one dtype and device for all
        for layer, cache_layer in zip(self._layers, cache.layers, strict=True):
            states = layer.qkv(_rms_norm(hidden, layer.input_norm), pack)
            states = states.view(rows, heads + 2 * kv_heads, head_dim)
            rotated = _rotary(states[:, : heads + kv_heads], cos, signed_sin)
            query, key = rotated[:, :heads], rotated[:, heads:]
            value = states[:, heads + kv_heads :]
            keys, values = cache_layer.update(key[:, :, None], value[:, :, None])
            if additive is None:  # no padding: transformers runs sdpa on the grouped heads
                context = F.scaled_dot_product_attention(
                    query[:, :, None], keys, values, scale=layer.scaling, enable_gqa=True
                )
            else:  # transformers' pack_gqa: a kv head's query heads as its query positions
                query = query.reshape(rows, kv_heads, heads // kv_heads, head_dim)
                context = F.scaled_dot_product_attention(
                    query, keys, values, attn_mask=additive, scale=layer.scaling
                )
            hidden = hidden + layer.out(context.reshape(rows, heads * head_dim), pack)
            gate, up = layer.gate_up(_rms_norm(hidden, layer.post_norm), pack).chunk(2, dim=-1)
            hidden = hidden + layer.down(F.silu(gate).mul_(up), pack)
        return self._head(_rms_norm(hidden, inner.norm), pack)


def decode_step(model: PreTrainedModel) -> LlamaDecodeStep | None:
    """The model's fused decode step (one per model, so that its packed weights are packed
    once for every engine and batch on it); None for an architecture it does not serve."""
    if model not in _STEPS:
        step = LlamaDecodeStep(model)
        _STEPS[model] = step if step._layers else None
    return _STEPS[model]

"""A decay on attention to the last n steps (seed 001, 4.2: "apply a decay factor to the attention
weights of the most recent n steps"): before the softmax, every query's scores to its n
previous positions gain log(factor), so their weights are multiplied by the factor and the
row renormalised. Positions are counted over the keys the mask lets a query see, so padding
(anywhere in the cache) does not count as a step.

transformers' Llama takes no score bias, so the decay is an attention implementation
registered with transformers (eager attention plus the bias, on eager attention's mask). The
setting is saved in the model's config (`loopfix_attention_decay`); `use_attention_decay`
switches a model built or loaded with it to the decayed attention, in training and generation
alike. The fused decode path runs only under sdpa attention, so generation goes through this.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask
from transformers.models.llama.modeling_llama import eager_attention_forward

__all__ = ["DECAY_KEY", "recent_bias", "use_attention_decay"]

DECAY_KEY = "loopfix_attention_decay"  # the model config's {"steps": n, "factor": f}
_IMPLEMENTATION = "loopfix_recent_decay"


def recent_bias(mask: torch.Tensor, steps: int, factor: float) -> torch.Tensor:
    """The additive bias for an eager attention mask (0 where a key is visible, very negative
    where not; shape (batch, 1, queries, keys)): log(factor) on each query's `steps` previous
    visible keys, 0 elsewhere."""
    visible = mask > torch.finfo(mask.dtype).min / 2
    # visible keys at or after each key, the query's own position being the last visible one
    rank = visible.flip(-1).cumsum(-1).flip(-1) - 1
    recent = visible & (rank >= 1) & (rank <= steps)
    return recent.to(mask.dtype) * math.log(factor)


def _decayed_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    if attention_mask is None:
        raise ValueError("attention decay: the model gave no attention mask")
    decay = getattr(module.config, DECAY_KEY)
    mask = attention_mask + recent_bias(attention_mask, decay["steps"], decay["factor"])
    return eager_attention_forward(module, query, key, value, mask, **kwargs)  # type: ignore[arg-type]


def use_attention_decay(model: torch.nn.Module) -> None:
    """Switch `model` to the decayed attention if its config asks for it (else leave it)."""
    if getattr(model.config, DECAY_KEY, None) is None:
        return
    AttentionInterface.register(_IMPLEMENTATION, _decayed_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(_IMPLEMENTATION, eager_mask)
    model.set_attn_implementation(_IMPLEMENTATION)  # type: ignore[operator]

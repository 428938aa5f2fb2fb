"""Where two outputs of one prompt part, and what the model's distribution looked like there.

The distribution comes from a teacher-forced forward pass of the reference model at batch 1
(no padding) over prompt + common prefix: the tie-break question "was this a near-tie?" is then
answered by one fixed computation, not by whichever of the two runs happened to be right.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import PreTrainedModel

from loopfix.consistency.result import Divergence, TokenProbability

__all__ = ["TOP_K", "first_difference", "find_divergence", "step_logits"]

TOP_K = 5


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where a and b differ (the shorter length when one is a prefix of the
    other); None when they are equal."""
    for position, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return position
    return None if len(a) == len(b) else min(len(a), len(b))


@torch.inference_mode()
def step_logits(
    model: PreTrainedModel, prompt: Sequence[int], output: Sequence[int]
) -> torch.Tensor:
    """Float32 logits of the distribution each output token was drawn from (one row per token,
    computed teacher-forced in one pass)."""
    ids = torch.tensor([list(prompt) + list(output)], device=model.device)
    logits = model(input_ids=ids).logits[0, len(prompt) - 1 : len(prompt) - 1 + len(output)]
    return logits.float().cpu()


def _token(tokenizer: Any, token: int, probs: torch.Tensor) -> TokenProbability:
    return TokenProbability(token, str(tokenizer.decode([token])), float(probs[token]))


def find_divergence(
    model: PreTrainedModel,
    tokenizer: Any,
    prompt_id: str,
    prompt: Sequence[int],
    outputs: tuple[Sequence[int], Sequence[int]],
    labels: tuple[str, str],
    near_tie: float,
) -> Divergence | None:
    """The first divergence of outputs a and b (prompt = a's context), or None when equal."""
    a, b = outputs
    position = first_difference(a, b)
    if position is None:
        return None
    logits = step_logits(model, prompt, list(a[:position]) + [0])[-1]
    probs = torch.softmax(logits, dim=-1)
    values, ids = probs.topk(min(TOP_K, probs.shape[-1]))
    return Divergence(
        prompt_id,
        labels[0],
        labels[1],
        position,
        _token(tokenizer, int(a[position]), probs) if position < len(a) else None,
        _token(tokenizer, int(b[position]), probs) if position < len(b) else None,
        [_token(tokenizer, int(i), probs) for i in ids],
        float(values[0] - values[1]) if len(values) > 1 else 1.0,
        len(values) > 1 and float(values[0] - values[1]) < near_tie,
    )

"""What a model computed at each step of its own generation: the hidden state that chose each
token, and that choice's top-1 probability and entropy.

Read back in one teacher-forced pass over prompt + output, which computes the states and logits
the decode engine computed while generating (the same weights and tokens; a greedy output is
reproduced exactly up to float rounding). The probability is the model's (temperature 1, no
penalty), as the engine's `capture` reports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from loopfix.errors import LoopfixError

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["StepSignals", "step_signals"]


@dataclass(frozen=True)
class StepSignals:
    """Per output token t: `hidden[t]`, the layer's state at the position that predicted it;
    `top1[t]` and `entropy[t]` (nats) of that prediction."""

    hidden: np.ndarray  # (tokens, width), float32
    top1: np.ndarray  # (tokens,)
    entropy: np.ndarray  # (tokens,)


def step_signals(
    model: PreTrainedModel, prompt: Sequence[int], output: Sequence[int], layer: int
) -> StepSignals:
    """The signals of `output` generated after `prompt`; `layer` 0 is the embeddings, i the
    output of decoder layer i."""
    if not prompt or not output:
        raise ValueError("a step needs a prompt token before it and an output token")
    vocabulary = int(model.config.get_text_config().vocab_size)
    if max(output) >= vocabulary:  # an edited record, or another model's: not an index error
        raise LoopfixError(f"tokens: id {max(output)} is not in the model's {vocabulary} ids")
    ids = torch.tensor([[*prompt, *output]], device=model.device)
    with torch.no_grad():
        result = model(input_ids=ids, output_hidden_states=True)
    first = len(prompt) - 1  # the position whose logits chose output token 0
    chosen = slice(first, first + len(output))
    log_probs = torch.log_softmax(result.logits[0, chosen].float(), dim=-1)
    probs = log_probs.exp()
    entropy = -(probs * log_probs).nan_to_num().sum(dim=-1)
    hidden = result.hidden_states[layer][0, chosen].float()
    return StepSignals(
        hidden.cpu().numpy(),
        probs.max(dim=-1).values.cpu().numpy(),
        entropy.cpu().numpy(),
    )

"""A scorer model's hidden states of a text, mean-pooled per layer: the hidden-state tier's input.

A text is tokenized without special tokens and only its last `STATE_TOKENS` tokens are read (a
loop that runs to the cap shows at the end). Each layer's hidden states are averaged over those
tokens; the probe (`probe.py`) reads the layers it was fitted on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

STATE_TOKENS = 512
"""How many tokens at the end of a text the scorer reads."""

SCORER_MODEL = "loopfix:smollm2"
"""The scorer whose hidden states the shipped probe was fitted on."""


def tail_token_ids(
    tokenizer: PreTrainedTokenizerBase, text: str, max_tokens: int = STATE_TOKENS
) -> list[int]:
    """The last `max_tokens` token ids of `text` (no special tokens added)."""
    ids: list[int] = tokenizer(text, add_special_tokens=False).input_ids
    return ids[-max_tokens:]


def pooled_states(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    *,
    batch_size: int = 8,
    max_tokens: int = STATE_TOKENS,
) -> np.ndarray:
    """Mean-pooled hidden states of each text: float32, shape (texts, layers + 1, hidden); index
    0 is the embeddings, index i the output of decoder layer i.

    Texts are batched in order of length and padded on the right: under causal attention a real
    token never sees the padding after it, so each row equals its text run alone."""
    token_ids = [tail_token_ids(tokenizer, text, max_tokens) for text in texts]
    if any(not ids for ids in token_ids):
        raise ValueError("a text with no tokens has no hidden states")
    # The decoder alone: the language-model head's logits are not needed.
    decoder = model.base_model
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    order = sorted(range(len(texts)), key=lambda index: len(token_ids[index]))
    pooled: list[np.ndarray] = [np.empty(0)] * len(texts)
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        width = max(len(token_ids[index]) for index in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, index in enumerate(batch):
            ids[row, : len(token_ids[index])] = torch.tensor(token_ids[index])
            mask[row, : len(token_ids[index])] = 1
        with torch.no_grad():
            output = decoder(
                input_ids=ids.to(model.device),
                attention_mask=mask.to(model.device),
                output_hidden_states=True,
            )
        states = torch.stack(output.hidden_states, dim=1).float()  # (batch, layers+1, T, H)
        weights = mask.to(states.device, torch.float32)[:, None, :, None]
        means = (states * weights).sum(dim=2) / weights.sum(dim=2)
        for row, index in enumerate(batch):
            pooled[index] = means[row].cpu().numpy()
    return np.stack(pooled).astype(np.float32)


def layer_features(pooled: np.ndarray, layers: Sequence[int]) -> np.ndarray:
    """The probe's input: the pooled states of `layers`, concatenated per text."""
    return pooled[:, list(layers), :].reshape(len(pooled), -1)

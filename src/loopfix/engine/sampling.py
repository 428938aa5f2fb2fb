"""How the decode engine turns logits into tokens: the sampler's penalties and warpers in
`model.generate`'s order, and counter-based draws.

A draw uses one uniform number per (request seed, output position), made by splitmix64 for all
rows at once, and inverse-CDF sampling; so a sample depends only on its own seed, never on its
batch mates, and two runs whose logits agree at a step draw the same token there.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import (
    LogitsProcessorList,
    MinPLogitsWarper,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from loopfix.guards.base import GuardContext
from loopfix.guards.chain import GuardChain
from loopfix.guards.penalty import PenaltyGuard, PenaltyParams
from loopfix.records import DecodeSettings

__all__ = ["draw", "sampler_penalties", "sampler_warpers", "uniforms"]


def uniforms(seeds: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """One number in [0, 1) per (seed, position): splitmix64 of the pair, 53 bits."""
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps by design
        z = seeds.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + positions.astype(
            np.uint64
        ) * np.uint64(0xD1B54A32D192ED03)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def draw(probs: torch.Tensor, u: np.ndarray) -> torch.Tensor:
    """Inverse-CDF sampling, one row per uniform: the first token whose cumulative
    probability exceeds u * total (a token of probability 0 is never chosen)."""
    cdf = probs.double().cumsum(dim=-1)
    total = cdf[:, -1:]
    target = torch.from_numpy(u).to(cdf.device)[:, None] * total
    index = torch.searchsorted(cdf, torch.minimum(target, total * (1 - 1e-12)), right=True)
    return index[:, 0].clamp(max=probs.shape[-1] - 1)


def sampler_warpers(settings: DecodeSettings) -> LogitsProcessorList:
    """Temperature and truncation, as `model.generate` builds them (none under greedy)."""
    warpers = LogitsProcessorList()
    if not settings.greedy:
        warpers.append(TemperatureLogitsWarper(settings.temperature))
        if settings.top_k:
            warpers.append(TopKLogitsWarper(settings.top_k))
        if settings.top_p < 1.0:
            warpers.append(TopPLogitsWarper(settings.top_p))
        if settings.min_p:
            warpers.append(MinPLogitsWarper(settings.min_p))
    return warpers


def sampler_penalties(settings: DecodeSettings, vocab_size: int) -> GuardChain:
    """The sampler's own penalties, which run before any guard."""
    params = PenaltyParams(
        repetition=settings.repetition_penalty,
        presence=settings.presence_penalty,
        frequency=settings.frequency_penalty,
    )
    if params == PenaltyParams():
        return GuardChain([])
    return GuardChain([PenaltyGuard(params, GuardContext(vocab_size))])

"""A transformers decode loop that can take tokens back: what `rescue` (and `cut`) need.

`model.generate` cannot undo a token, so rescue runs its own loop, one sequence at a time (each
sequence rolls back by its own amount; a batched cache would have to crop every row alike).

Steps per sequence:
1. Start the chain on the prompt; prefill the KV cache.
2. Each step: the sampler's penalties (HF repetition, then OpenAI presence / frequency), the
   chain, then the sampler's warpers (temperature, top-k, top-p, min-p) - the order of
   `backends.hf.generate` - then argmax (greedy) or a draw from the sequence's seeded generator.
3. Feed the token to the chain. Stop at EOS, at the cap, or when `cut` fired ("repetition").
4. When `rescue` asks, roll back: the chain replays the kept tokens, the KV cache is cropped
   to the kept prefix (a full re-prefill for caches that cannot be cropped: sliding-window or
   linear-attention layers), and the last kept token is fed again to get its logits.
With an empty chain and greedy settings the tokens equal `model.generate`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from transformers import (
    DynamicCache,
    LogitsProcessorList,
    MinPLogitsWarper,
    PreTrainedModel,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from loopfix.guards.base import GuardContext
from loopfix.guards.chain import GuardChain
from loopfix.guards.hf import row_seed
from loopfix.guards.penalty import PenaltyGuard, PenaltyParams
from loopfix.records import DecodeSettings, FinishReason

__all__ = ["GuardedGeneration", "generate_guarded", "sampler_processors"]


@dataclass(frozen=True)
class GuardedGeneration:
    tokens: list[int]
    finish_reason: FinishReason
    record: dict[str, Any] = field(default_factory=dict)  # rescues / cut, from the chain
    forward_tokens: int = 0  # tokens the model ran on after the prefill (rollbacks cost extra)


def sampler_processors(settings: DecodeSettings) -> tuple[LogitsProcessorList, LogitsProcessorList]:
    """(penalties before the guards, warpers after them), as `model.generate` builds them."""
    before = LogitsProcessorList()
    if settings.repetition_penalty != 1.0:
        before.append(RepetitionPenaltyLogitsProcessor(settings.repetition_penalty))
    after = LogitsProcessorList()
    if not settings.greedy:
        after.append(TemperatureLogitsWarper(settings.temperature))
        if settings.top_k:
            after.append(TopKLogitsWarper(settings.top_k))
        if settings.top_p < 1.0:
            after.append(TopPLogitsWarper(settings.top_p))
        if settings.min_p:
            after.append(MinPLogitsWarper(settings.min_p))
    return before, after


def _croppable(cache: DynamicCache) -> bool:
    return all(type(layer).__name__ == "DynamicLayer" for layer in cache.layers)


class _Sequence:
    """One sequence's ids and KV cache, with a rollback that keeps them in step."""

    def __init__(self, model: PreTrainedModel, prompt: Sequence[int]) -> None:
        self.model, self.prompt_length = model, len(prompt)
        self.ids = torch.tensor([list(prompt)], dtype=torch.long, device=model.device)
        self.cache = DynamicCache(config=model.config)
        self.forwarded = 0
        self.logits = self._forward(self.ids)

    def _forward(self, ids: torch.Tensor) -> torch.Tensor:
        output = self.model(input_ids=ids, cache=self.cache, use_cache=True)
        return output.logits[:, -1, :].float()

    def append(self, token: int) -> None:
        step = torch.tensor([[token]], dtype=torch.long, device=self.ids.device)
        self.ids = torch.cat([self.ids, step], dim=1)
        self.logits = self._forward(step)
        self.forwarded += 1

    def roll_back(self, output_length: int) -> None:
        """Keep the prompt and `output_length` generated tokens; recompute the next logits."""
        keep = self.prompt_length + output_length
        self.ids = self.ids[:, :keep]
        if _croppable(self.cache):
            # The cache holds every token but the newest; drop down to keep - 1 and re-feed the
            # last kept token, whose logits are the distribution at the rollback point.
            self.cache.crop(-(self.cache.get_seq_length() - (keep - 1)))
            self.logits = self._forward(self.ids[:, keep - 1 :])
        else:
            self.cache = DynamicCache(config=self.model.config)
            self.logits = self._forward(self.ids)
        self.forwarded += 1


def _openai_penalties(settings: DecodeSettings, vocab_size: int) -> GuardChain:
    """The sampler's own presence / frequency penalties (they run before the guards)."""
    if not (settings.presence_penalty or settings.frequency_penalty):
        return GuardChain([])
    params = PenaltyParams(
        repetition=1.0, presence=settings.presence_penalty, frequency=settings.frequency_penalty
    )
    return GuardChain([PenaltyGuard(params, GuardContext(vocab_size))])


@torch.inference_mode()
def _generate_one(
    model: PreTrainedModel,
    prompt: Sequence[int],
    settings: DecodeSettings,
    chain: GuardChain,
    eos_ids: set[int],
    seed: int,
) -> GuardedGeneration:
    sampler = _openai_penalties(settings, model.config.vocab_size)
    for part in (sampler, chain):
        part.add(0, prompt, temperature=settings.temperature, seed=seed)
    before, after = sampler_processors(settings)
    generator = torch.Generator(device=model.device).manual_seed(seed)
    sequence = _Sequence(model, prompt)
    output: list[int] = []
    reason: FinishReason = "length"
    while len(output) < settings.max_new_tokens:
        ids = cast(torch.LongTensor, sequence.ids)
        scores = before(ids, cast(torch.FloatTensor, sequence.logits.clone()))
        scores = after(ids, cast(torch.FloatTensor, chain.apply(sampler.apply(scores))))
        if settings.greedy:
            token = int(scores.argmax(dim=-1))
        else:
            token = int(torch.multinomial(torch.softmax(scores, dim=-1), 1, generator=generator))
        output.append(token)
        for part in (sampler, chain):
            part.extend(0, [token])
        if token in eos_ids:
            reason = "stop"
            break
        if chain.stopped(0):
            reason = "repetition"
            break
        rollback = chain.pending_rollbacks().get(0)
        if rollback is not None:
            for part in (sampler, chain):
                part.rollback(0, rollback)
            del output[rollback:]
            sequence.roll_back(rollback)
            continue
        if len(output) < settings.max_new_tokens:
            sequence.append(token)
    return GuardedGeneration(output, reason, chain.record(0), sequence.forwarded)


def generate_guarded(
    model: PreTrainedModel,
    prompts: Sequence[Sequence[int]],
    settings: DecodeSettings,
    build_chain: Callable[[], GuardChain],
    eos_token_id: int | Sequence[int] | None,
    seeds: Sequence[int] | None = None,
) -> list[GuardedGeneration]:
    """One guarded continuation per prompt (a fresh chain each); see the module docstring.

    seeds: one per prompt (default: derived from settings.seed and the prompt).
    """
    if eos_token_id is None:
        eos_ids: set[int] = set()
    elif isinstance(eos_token_id, int):
        eos_ids = {eos_token_id}
    else:
        eos_ids = set(eos_token_id)
    results = []
    for index, prompt in enumerate(prompts):
        seed = seeds[index] if seeds is not None else row_seed(settings.seed, list(prompt))
        results.append(_generate_one(model, prompt, settings, build_chain(), eos_ids, seed))
    return results

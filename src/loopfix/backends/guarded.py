"""`GuardedHFBackend`: the scan's `Backend` over transformers, with a guard chain applied.

Chains that only rewrite logits ride on `model.generate` through the HF backend's processor
hook (batched, and "none" is exactly the plain path). Chains with `rescue` or `cut` need to take
tokens back or stop a row, so they run in `generate_guarded`, one sequence at a time. What the
guards did to each sample (rescues, cut) is kept by request seed for the caller to store, and
the generation time is counted for tokens-per-second.

This module sits above `loopfix.backends` and `loopfix.scan` (only `compare` imports it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from loopfix.backends.base import Generation, Request
from loopfix.backends.hf import HFBackend
from loopfix.guards.chain import GuardChain
from loopfix.guards.hf import processor_factory
from loopfix.guards.hf_loop import generate_guarded
from loopfix.records import DecodeSettings

__all__ = ["GuardedHFBackend"]


class GuardedHFBackend:
    """A `Backend` ("hf") that generates under one guard chain at one sampler temperature."""

    name = "hf"

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        build_chain: Callable[[], GuardChain],
        batch_size: int = 16,
    ) -> None:
        self.model, self.tokenizer, self.build_chain = model, tokenizer, build_chain
        self.batch_size = batch_size
        self.context_length: int | None = getattr(model.config, "max_position_embeddings", None)
        probe = build_chain()
        self.needs_loop = bool(set(probe.names) & {"rescue", "cut"})
        self.tokens, self.seconds = 0, 0.0

    def generate(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        start = time.perf_counter()
        results = (
            self._loop(requests, settings) if self.needs_loop else self._batched(requests, settings)
        )
        for index, generation in results:
            self.seconds += time.perf_counter() - start
            self.tokens += len(generation.tokens)
            yield index, generation
            start = time.perf_counter()

    def _batched(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        factory = processor_factory(
            self.build_chain, self.tokenizer.pad_token_id, settings.temperature, settings.seed
        )
        backend = HFBackend(self.model, self.tokenizer, self.batch_size, processors=[factory])
        yield from backend.generate(requests, settings)

    def _loop(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        eos = self.tokenizer.eos_token_id
        for index, request in enumerate(requests):
            (result,) = generate_guarded(
                self.model, [request.ids or []], settings, self.build_chain, eos, [request.seed]
            )
            guards = {**result.record, "forward_tokens": result.forward_tokens}
            text = str(self.tokenizer.decode(result.tokens, skip_special_tokens=True))
            yield index, Generation(result.tokens, result.finish_reason, text=text, guards=guards)

    def close(self) -> None:
        """Nothing to release: the model stays with whoever loaded it."""

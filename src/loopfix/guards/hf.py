"""Thin HF transformers adapters: a `LogitsProcessor` and a `StoppingCriteria` over a chain.

`model.generate` hands processors the whole `input_ids` each step; the adapter feeds the chain
only the tokens it has not seen yet, so the guards' state stays incremental. Prompts arrive
left-padded: leading pad tokens are stripped before the chain sees a prompt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import cast

import torch
from transformers import LogitsProcessor, StoppingCriteria

from loopfix.guards.chain import GuardChain

__all__ = ["GuardLogitsProcessor", "GuardStoppingCriteria", "processor_factory", "row_seed"]


def row_seed(seed: int, prompt: list[int]) -> int:
    """A per-sequence seed from the run's seed and the prompt, independent of batch layout."""
    digest = hashlib.sha256(f"{seed}:{prompt}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class GuardLogitsProcessor(LogitsProcessor):
    """Runs a `GuardChain` inside `model.generate` (one processor per batch)."""

    def __init__(
        self,
        chain: GuardChain,
        prompt_width: int,
        pad_token_id: int | None,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.chain, self.prompt_width, self.pad_token_id = chain, prompt_width, pad_token_id
        self.temperature, self.seed = temperature, seed
        self.fed = -1  # columns of input_ids the chain has seen; -1 before the first step

    def _start(self, input_ids: torch.Tensor) -> None:
        for row, ids in enumerate(input_ids.tolist()):
            prompt, output = ids[: self.prompt_width], ids[self.prompt_width :]
            start = 0
            while start < len(prompt) and prompt[start] == self.pad_token_id:
                start += 1
            prompt = prompt[start:]
            self.chain.add(row, prompt, output, None, self.temperature, row_seed(self.seed, prompt))
        self.fed = input_ids.shape[1]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if not self.chain:
            return scores
        if self.fed < 0:
            self._start(input_ids)
        elif input_ids.shape[1] > self.fed:
            for row, new in enumerate(input_ids[:, self.fed :].tolist()):
                self.chain.extend(row, new)
            self.fed = input_ids.shape[1]
        return cast(torch.FloatTensor, self.chain.apply(scores.clone()))


class GuardStoppingCriteria(StoppingCriteria):
    """Ends the rows a `cut` guard stopped (shares the processor's chain, which it follows)."""

    def __init__(self, processor: GuardLogitsProcessor) -> None:
        self.processor = processor

    def __call__(
        self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: object
    ) -> torch.BoolTensor:
        chain = self.processor.chain
        if self.processor.fed >= 0 and input_ids.shape[1] > self.processor.fed:
            # The processor sees the newest token only at the next step; the criterion needs it now.
            for row, new in enumerate(input_ids[:, self.processor.fed :].tolist()):
                chain.extend(row, new)
            self.processor.fed = input_ids.shape[1]
        stopped = [chain.stopped(row) for row in range(input_ids.shape[0])]
        return cast(
            torch.BoolTensor, torch.tensor(stopped, dtype=torch.bool, device=input_ids.device)
        )


def processor_factory(
    build_chain: Callable[[], GuardChain],
    pad_token_id: int | None,
    temperature: float,
    seed: int,
) -> Callable[[int], LogitsProcessor]:
    """A `backends.hf.ProcessorFactory`: a fresh chain and processor per batch."""

    def factory(prompt_width: int) -> LogitsProcessor:
        return GuardLogitsProcessor(build_chain(), prompt_width, pad_token_id, temperature, seed)

    return factory

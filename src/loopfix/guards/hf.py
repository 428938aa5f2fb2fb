"""Thin HF transformers adapters: a `LogitsProcessor` and a `StoppingCriteria` over a chain, and
`guard_processor`, which builds both for a user's own `model.generate` in one call.

`model.generate` hands processors the whole `input_ids` each step; the adapter feeds the chain
only the tokens it has not seen yet, so the guards' state stays incremental. Prompts arrive
left-padded: leading pad tokens are stripped before the chain sees a prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast

import torch
from transformers import (
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from loopfix.guards.args import GuardArg
from loopfix.guards.base import GuardContext, GuardError
from loopfix.guards.chain import GuardChain
from loopfix.guards.registry import parse_guards
from loopfix.guards.rescue import RescueGuard
from loopfix.seeds import derive_seed

__all__ = ["GuardLogitsProcessor", "GuardStoppingCriteria", "guard_processor"]


class GuardLogitsProcessor(LogitsProcessor):
    """Runs a `GuardChain` inside `model.generate`: one processor per `generate` call.

    prompt_width: columns of the (left-padded) prompt; None: the width of the first call's
        `input_ids`, which `generate` passes before it has generated anything.
    """

    def __init__(
        self,
        chain: GuardChain,
        prompt_width: int | None,
        pad_token_id: int | None,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> None:
        if any(isinstance(g, RescueGuard) and g.can_roll_back for g in chain.guards):
            # model.generate never takes a token back: such a rescue would request rollbacks
            # that nobody performs and silently do nothing.
            raise GuardError(
                "rescue built with rollback=True cannot run inside model.generate, which cannot "
                "roll back; build the chain with parse_guards(..., rollback=False), or use "
                "loopfix.guard_processor"
            )
        self.chain, self.prompt_width, self.pad_token_id = chain, prompt_width, pad_token_id
        self.temperature, self.seed = temperature, seed
        self.fed = -1  # columns of input_ids the chain has seen; -1 before the first step

    def _start(self, input_ids: torch.Tensor) -> None:
        width = input_ids.shape[1] if self.prompt_width is None else self.prompt_width
        for row, ids in enumerate(input_ids.tolist()):
            prompt, output = ids[:width], ids[width:]
            start = 0
            while start < len(prompt) and prompt[start] == self.pad_token_id:
                start += 1
            prompt = prompt[start:]
            self.chain.add(
                row, prompt, output, None, self.temperature, derive_seed(self.seed, prompt)
            )
        self.fed = input_ids.shape[1]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if not self.chain:
            return scores
        if self.fed < 0:
            self._start(input_ids)
        elif input_ids.shape[1] < self.fed:
            raise ValueError(
                "a guard processor follows one generate call; build a new one for each call"
            )
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


class GenerateGuards(TypedDict):
    """The keyword arguments of `model.generate` that run a guard chain."""

    logits_processor: LogitsProcessorList
    stopping_criteria: StoppingCriteriaList


def guard_processor(
    spec: str,
    tokenizer: Any,
    guard_args: Mapping[str, GuardArg] | None = None,
    *,
    temperature: float = 0.0,
    seed: int = 0,
    vocab_size: int | None = None,
) -> GenerateGuards:
    """The keyword arguments that run guard `spec` ("dry", "rescue+dry") inside one
    `model.generate` call: `model.generate(**inputs, **guard_processor("dry", tokenizer))`.

    guard_args: "guard.parameter" -> value, as `--guard-arg` (e.g. {"dry.multiplier": 1.0}).
    temperature, seed: the sampling temperature `generate` uses, and the seed of the guards'
        own draws (temperature guards under greedy decoding).
    vocab_size: width of the model's logits when it differs from `len(tokenizer)`.

    `model.generate` cannot take tokens back, so `rescue` runs as it does under vLLM: it bans
    the token that would continue the cycle instead of rolling back to the loop's onset
    (docs/guards.md). Build a new one for every `generate` call.
    """
    context = GuardContext.from_tokenizer(tokenizer, vocab_size)
    chain = parse_guards(spec, guard_args, context, rollback=False)
    processor = GuardLogitsProcessor(
        chain, None, tokenizer.pad_token_id, temperature=temperature, seed=seed
    )
    return {
        "logits_processor": LogitsProcessorList([processor]),
        "stopping_criteria": StoppingCriteriaList([GuardStoppingCriteria(processor)]),
    }

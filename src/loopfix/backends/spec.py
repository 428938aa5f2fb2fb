"""`BackendSpec`: which backend to open and with what, the guards among it parsed and validated
once (`GuardSpec`); `loopfix.backends.open.open_backend` opens it.

Importing this module loads no model library (the guards' registry is imported when a spec is
parsed), so settings models may build specs cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from loopfix.engine.warning import StepWarning
    from loopfix.guards.args import GuardArg
    from loopfix.guards.base import GuardContext, GuardParams
    from loopfix.guards.chain import GuardChain

__all__ = [
    "NO_GUARDS",
    "BackendKind",
    "BackendSpec",
    "GuardSpec",
    "LocalKind",
    "OpenAIOptions",
    "RayOptions",
]

BackendKind = Literal["hf", "vllm", "openai", "ray"]
LocalKind = Literal["hf", "vllm"]  # what runs the weights in this process (or a Ray actor)


@dataclass(frozen=True)
class GuardSpec:
    """A guard chain, parsed and validated once.

    params: guard name -> its validated parameters, in the canonical order; empty: "none".
    args: the "guard.parameter" values given for these guards, as a vLLM request carries them.
    """

    params: Mapping[str, GuardParams] = field(default_factory=dict)
    args: Mapping[str, GuardArg] = field(default_factory=dict)

    @property
    def spec(self) -> str:
        """The chain as a spec string ("dry+rescue", "none"), guards in canonical order."""
        return "+".join(self.params) or "none"

    @classmethod
    def parse(
        cls, spec: str, guard_args: Mapping[str, GuardArg] | None = None, *, shared: bool = False
    ) -> GuardSpec:
        """`spec` ("rescue+dry"; a guard may carry its own arguments, "rescue[escape=think_end]")
        with `guard_args` ("guard.parameter" -> value); a GuardError
        names any unknown guard or bad parameter. shared: `guard_args` may hold arguments of
        guards outside `spec` (a comparison's, shared by all its guards), which are left out;
        otherwise such an argument is an error (a typo must not be a silent default)."""
        from loopfix.guards.registry import guard_names, inline_args, spec_args, validate_params

        spec, own = inline_args(spec)
        given = dict(guard_args or {})
        if shared:
            names = set(guard_names(spec))
            given = {key: value for key, value in given.items() if key.split(".")[0] in names}
        given |= own  # a guard's own arguments in the spec win over shared ones
        ordered, by_guard = spec_args(spec, given)
        params = {name: validate_params(name, by_guard.get(name, {})) for name in ordered}
        return cls(params, given)

    def chain(self, context: GuardContext | None, *, rollback: bool = True) -> GuardChain:
        """A fresh chain of these guards (each run needs its own: chains hold per-row state)."""
        from loopfix.guards.registry import build_chain

        return build_chain(self.params, context, rollback=rollback)


NO_GUARDS = GuardSpec()


@dataclass(frozen=True)
class OpenAIOptions:
    """How to talk to an OpenAI-compatible server (the defaults live in `ScanConfig`)."""

    model_name: str | None  # None: the first model the server lists
    api: Literal["chat", "completions"]
    concurrency: int  # requests in flight
    api_key_env: str  # the environment variable holding the API key
    timeout: float  # seconds per request
    think: bool | None  # chat_template_kwargs.enable_thinking; None: unset


@dataclass(frozen=True)
class RayOptions:
    """A fan-out over a Ray cluster: one actor per CPU, each running `runs` on the model."""

    address: str  # a cluster's address, or "local" to start one
    runs: LocalKind


@dataclass(frozen=True)
class BackendSpec:
    """One backend to open.

    kind: hf (our engine over transformers), vllm (offline vLLM), openai (a server at `model`),
        ray (fan-out: `ray.runs` in every actor).
    model: a folder, hub id, `loopfix:NAME`, or a server's base URL (openai).
    batch_size: requests the caller hands over at once (rows decoded together on hf).
    dtype: the weights' dtype (hf, vllm); None: the loader's default.
    device: hf only (None: the best available). capture: hf only, per-step top-1 and entropy.
    guards: decode-time guards (hf, vllm). processor: vllm only, load loopfix's logits
        processor even when `guards` needs none (an engine other backends will share).
    warning: hf only, an early warning the engine reads from the model while it generates
        (`engine.warning`; each generation's `warning_step`, an `early` rescue acts on it).
    """

    kind: BackendKind
    model: str
    batch_size: int
    dtype: str | None = None
    device: str | None = None
    capture: bool = False
    trust_remote_code: bool = False
    guards: GuardSpec = NO_GUARDS
    processor: bool = False
    openai: OpenAIOptions | None = None
    ray: RayOptions | None = None
    warning: StepWarning | None = None

    def __post_init__(self) -> None:
        if (self.kind == "openai") != (self.openai is not None):
            raise ValueError("an openai backend, and only it, takes OpenAIOptions")
        if (self.kind == "ray") != (self.ray is not None):
            raise ValueError("a ray backend, and only it, takes RayOptions")

    def on_actor(self) -> BackendSpec:
        """What each Ray actor opens: this spec with the backend it runs as its kind."""
        assert self.ray is not None
        return replace(self, kind=self.ray.runs, ray=None)

"""The `BackendSpec` a `ScanConfig` asks for (`open_backend` opens it)."""

from __future__ import annotations

from loopfix.backends.base import BackendError
from loopfix.backends.spec import NO_GUARDS, BackendSpec, GuardSpec, OpenAIOptions, RayOptions
from loopfix.scan.config import ScanConfig

__all__ = ["backend_spec"]


def backend_spec(
    config: ScanConfig, guards: GuardSpec = NO_GUARDS, *, processor: bool = False
) -> BackendSpec:
    """The backend `config` names; `guards` and `processor` as in `BackendSpec` (compare)."""
    openai = None
    if config.backend == "openai":
        openai = OpenAIOptions(
            config.model_name,
            config.api,
            config.concurrency,
            config.api_key_env,
            config.timeout,
            config.think,
        )
    warning = None
    if config.warning is not None:
        if config.backend != "hf":
            raise BackendError("--warning: only the hf engine reads the model while it generates")
        from loopfix.states.warning import load_warning

        warning = load_warning(config.warning, config.model)
    ray = None
    if config.ray_address is not None:
        if config.backend == "openai":
            raise BackendError("Ray fans out the hf or vllm backend, not openai")
        ray = RayOptions(config.ray_address, config.backend)
    return BackendSpec(
        "ray" if ray is not None else config.backend,
        config.model,
        config.batch_size,
        dtype=config.dtype,
        # hf only, as the settings' descriptions say
        device=config.device if config.backend == "hf" else None,
        capture=config.capture if config.backend == "hf" else False,
        trust_remote_code=config.trust_remote_code,
        guards=guards,
        processor=processor,
        openai=openai,
        ray=ray,
        warning=warning,
    )

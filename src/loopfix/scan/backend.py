"""Open the backend a `ScanConfig` asks for (imports stay lazy: vllm, httpx and ray are extras)."""

from __future__ import annotations

from typing import Any

from loopfix.backends.base import Backend
from loopfix.scan.config import ScanConfig

__all__ = ["open_backend"]


def open_backend(config: ScanConfig) -> Backend:
    if config.ray_address is not None:
        from loopfix.backends.ray import RayBackend

        return RayBackend(config.ray_address, config.backend, config.model, _local_options(config))
    if config.backend == "openai":
        from loopfix.backends.openai import OpenAIBackend

        return OpenAIBackend(
            config.model,
            model_name=config.model_name,
            api=config.api,
            concurrency=config.concurrency,
            batch_size=config.batch_size,
            api_key_env=config.api_key_env,
            timeout=config.timeout,
            think=config.think,
        )
    if config.backend == "vllm":
        from loopfix.backends.vllm import VLLMBackend

        return VLLMBackend.load(config.model, **_local_options(config))
    from loopfix.backends.hf import HFBackend

    return HFBackend.load(config.model, **_local_options(config))


def _local_options(config: ScanConfig) -> dict[str, Any]:
    """Keyword arguments of `HFBackend.load` or `VLLMBackend.load`."""
    options: dict[str, Any] = {
        "batch_size": config.batch_size,
        "dtype": config.dtype,
        "trust_remote_code": config.trust_remote_code,
    }
    if config.backend == "hf":
        options |= {"device": config.device, "capture": config.capture}
    return options

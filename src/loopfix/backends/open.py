"""`open_backend(spec)`: the one place a `BackendSpec` becomes a running `Backend` (imports stay
lazy: vllm, httpx and ray are extras)."""

from __future__ import annotations

from loopfix.backends.base import Backend
from loopfix.backends.spec import BackendSpec

__all__ = ["open_backend"]


def open_backend(spec: BackendSpec) -> Backend:
    """Load or connect to what `spec` names; the caller closes it (or opens it in a `with`)."""
    if spec.kind == "ray":
        from loopfix.backends.ray import RayBackend

        return RayBackend(spec, open_backend)
    if spec.kind == "openai":
        from loopfix.backends.openai import OpenAIBackend

        assert spec.openai is not None  # BackendSpec checks it
        options = spec.openai
        return OpenAIBackend(
            spec.model,
            model_name=options.model_name,
            api=options.api,
            concurrency=options.concurrency,
            batch_size=spec.batch_size,
            api_key_env=options.api_key_env,
            timeout=options.timeout,
            think=options.think,
        )
    if spec.kind == "vllm":
        from loopfix.backends.vllm import VLLMBackend

        return VLLMBackend.load(
            spec.model,
            batch_size=spec.batch_size,
            dtype=spec.dtype,
            guards=spec.guards,
            processor=spec.processor,
            trust_remote_code=spec.trust_remote_code,
        )
    from loopfix.backends.hf import HFBackend

    return HFBackend.load(
        spec.model,
        device=spec.device,
        dtype=spec.dtype,
        trust_remote_code=spec.trust_remote_code,
        batch_size=spec.batch_size,
        capture=spec.capture,
        guards=spec.guards,
        warning=spec.warning,
    )

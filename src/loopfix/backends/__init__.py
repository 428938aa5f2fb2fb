"""Generation backends behind one `Backend` protocol, opened from a `BackendSpec` by
`open_backend`: `hf` (transformers, here), and the optional `vllm`, `openai` (HTTP) and `ray`
fan-out, imported from their modules on demand."""

from loopfix.backends.base import Backend, BackendError, Generation, Request
from loopfix.backends.hf import HFBackend
from loopfix.backends.identity import ModelFile, ModelIdentity
from loopfix.backends.open import open_backend
from loopfix.backends.spec import BackendSpec, GuardSpec

__all__ = [
    "Backend",
    "BackendError",
    "BackendSpec",
    "Generation",
    "GuardSpec",
    "HFBackend",
    "ModelFile",
    "ModelIdentity",
    "Request",
    "open_backend",
]

"""Generation backends behind one `Backend` protocol: `hf` (transformers, here), and the
optional `vllm`, `openai` (HTTP) and `ray` fan-out, imported from their modules on demand."""

from loopfix.backends.base import Backend, BackendError, Generation, Request
from loopfix.backends.hf import HFBackend

__all__ = ["Backend", "BackendError", "Generation", "HFBackend", "Request"]

"""Fan a scan out over a Ray cluster: one actor per worker, each running the hf or vllm backend.

Steps: start (`local`) or join a Ray cluster; render prompts with a tokenizer loaded in the
driver (no weights); start `workers` actors that each load the model once; deal whole batches
to the actors (a batch keeps its seed, so results equal a single-process run); yield results as
batches come back, so the scan stores them in the one store as usual.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from loopfix.backends.base import BackendError, Generation, Request
from loopfix.records import DecodeSettings

__all__ = ["RayBackend"]


class _Worker:
    """Body of the Ray actor: one backend, loaded once per worker process."""

    def __init__(self, kind: str, model: str, options: dict[str, Any]) -> None:
        import torch

        torch.set_num_threads(1)  # one CPU per actor: workers, not threads, give the speed-up
        if kind == "vllm":
            from loopfix.backends.vllm import VLLMBackend

            self.backend: Any = VLLMBackend.load(model, **options)
        else:
            from loopfix.backends.hf import HFBackend

            self.backend = HFBackend.load(model, **options)

    def generate(
        self, requests: list[Request], settings: DecodeSettings
    ) -> list[tuple[int, Generation]]:
        return list(self.backend.generate(requests, settings))

    def dtype(self) -> str | None:
        return self.backend.dtype  # type: ignore[no-any-return]


class RayBackend:
    """Deal batches of a scan to Ray actors and merge what they return."""

    name = "ray"

    def __init__(
        self,
        address: str,
        kind: str,
        model: str,
        options: dict[str, Any],
        workers: int | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as error:
            raise BackendError("--ray-address needs Ray: pip install 'loopfix[ray]'") from error
        from transformers import AutoConfig, AutoTokenizer

        from loopfix.models import resolve_model_path

        if kind not in ("hf", "vllm"):
            raise BackendError(f"Ray fans out the hf or vllm backend, not {kind}")
        self.ray = ray
        ray.init(
            address=None if address == "local" else address,
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
        )
        path = resolve_model_path(model)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.context_length = getattr(
            AutoConfig.from_pretrained(path), "max_position_embeddings", None
        )
        self.batch_size = int(options.get("batch_size", 16))  # type: ignore[call-overload]
        count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor: Any = ray.remote(num_cpus=1)(_Worker)
        self.workers: list[Any] = [actor.remote(kind, model, options) for _ in range(count)]
        self.dtype: str | None = ray.get(self.workers[0].dtype.remote())

    def generate(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        ray = self.ray
        pending: dict[Any, int] = {}
        for number, start in enumerate(range(0, len(requests), self.batch_size)):
            worker = self.workers[number % len(self.workers)]
            batch = list(requests[start : start + self.batch_size])
            pending[worker.generate.remote(batch, settings)] = start
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                start = pending.pop(ready[0])
                for offset, generation in ray.get(ready[0]):
                    yield start + offset, generation
        finally:
            for reference in pending:
                ray.cancel(reference)

    def close(self) -> None:
        for worker in self.workers:
            self.ray.kill(worker)
        self.ray.shutdown()

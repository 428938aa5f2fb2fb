"""Fan a scan out over a Ray cluster: one actor per worker, each running the hf or vllm backend.

Steps: start (`local`) or join a Ray cluster; render prompts with a tokenizer loaded in the
driver (no weights); start `workers` actors that each load the model once; deal whole batches
to the actors (a batch keeps its seed, so results equal a single-process run); yield results as
batches come back, so the scan stores them in the one store as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from loopfix.backends.base import Backend, BackendError, ClosedOnExit, Generation, Request
from loopfix.backends.identity import ModelFile, ModelIdentity, model_files
from loopfix.backends.spec import BackendSpec
from loopfix.records import DecodeSettings

__all__ = ["RayBackend"]


class _Worker:
    """Body of the Ray actor: one backend, loaded once per worker process by `opener`."""

    def __init__(self, spec: BackendSpec, opener: Callable[[BackendSpec], Backend]) -> None:
        import torch

        torch.set_num_threads(1)  # one CPU per actor: workers, not threads, give the speed-up
        self.backend = opener(spec)

    def generate(
        self, requests: list[Request], settings: DecodeSettings
    ) -> list[tuple[int, Generation]]:
        return list(self.backend.generate(requests, settings))

    def dtype(self) -> str | None:
        return self.backend.dtype


class RayBackend(ClosedOnExit):
    """Deal batches of a scan to Ray actors and merge what they return; each actor opens the
    spec's own backend with `opener` (`open_backend`, which passes itself: no import back)."""

    name = "ray"
    generation_cap: int | None = None  # the actors' models are not read in the driver

    def __init__(self, spec: BackendSpec, opener: Callable[[BackendSpec], Backend]) -> None:
        try:
            import ray
        except ImportError as error:
            raise BackendError("--ray-address needs Ray: pip install 'loopfix[ray]'") from error
        from transformers import AutoConfig, AutoTokenizer

        from loopfix.models import resolve_model_path

        if spec.ray is None:
            raise BackendError(f"a {spec.kind} spec does not say how to fan out over Ray")
        self.ray, self.model = ray, spec.model
        ray.init(
            address=None if spec.ray.address == "local" else spec.ray.address,
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
        )
        path = resolve_model_path(spec.model)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.context_length: int | None = getattr(
            AutoConfig.from_pretrained(path), "max_position_embeddings", None
        )
        self.batch_size = spec.batch_size
        count = max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor: Any = ray.remote(num_cpus=1)(_Worker)
        self.workers: list[Any] = [actor.remote(spec.on_actor(), opener) for _ in range(count)]
        self.dtype: str | None = ray.get(self.workers[0].dtype.remote())

    def identity(self, known: Mapping[str, ModelFile] | None = None) -> ModelIdentity:
        """The files as the driver sees them (every actor loads the same reference)."""
        return ModelIdentity(model_files(self.model, known))

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

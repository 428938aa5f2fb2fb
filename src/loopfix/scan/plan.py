"""What a scan generates: one job per (setting, sample, prompt), in fixed chunks.

Jobs of one setting are ordered sample-major (all prompts for sample 0, then sample 1, ...) and
cut into chunks of `batch_size`. Chunks never change between runs of one configuration, and a
batch's randomness depends only on its chunk, so a chunk regenerated after a crash reproduces the
samples an uninterrupted run would have written: resuming changes nothing but the time taken.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from loopfix.backends.base import Request
from loopfix.records import DecodeSettings
from loopfix.seeds import derive_seed
from loopfix.suites import SuiteItem

__all__ = ["Job", "PreparedItem", "chunks", "jobs_for"]


@dataclass(frozen=True)
class PreparedItem:
    """A suite item with its request template and whether it fits the model's context."""

    item: SuiteItem
    request: Request  # seed 0; each job sets its own
    prompt_length: int | None  # tokens, when a local tokenizer rendered the prompt
    overlong: bool


@dataclass(frozen=True)
class Job:
    settings: DecodeSettings
    prepared: PreparedItem
    sample_index: int
    seed: int

    @property
    def key(self) -> tuple[str, int, str]:
        """The store key of the record this job writes (as `Sample.key`)."""
        return (self.prepared.item.id, self.sample_index, self.settings.key())

    def request(self) -> Request:
        return replace(self.prepared.request, seed=self.seed)


def jobs_for(settings: DecodeSettings, items: list[PreparedItem], samples: int) -> list[Job]:
    # A seed per (run seed, prompt, sample), equal across temperatures so that settings are
    # compared on common random numbers; 31 bits, which every server accepts.
    return [
        Job(settings, prepared, index, derive_seed(settings.seed, prepared.item.id, index, bits=31))
        for index in range(samples)
        for prepared in items
    ]


def chunks(jobs: list[Job], size: int) -> list[list[Job]]:
    return [jobs[start : start + size] for start in range(0, len(jobs), size)]

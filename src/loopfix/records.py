"""The record that flows through loopfix, and its append-only JSON-lines store.

One `Sample` is one generated continuation: which prompt, which decode settings, the tokens,
the text, why it stopped, and what the loop detector said. Every stage reads and writes these;
nothing re-derives what an earlier stage stored.

The store appends one line per sample and flushes it, so a process killed at any moment loses at
most the sample it was writing; a torn last line is cut away when the store is reopened for
writing. Readers (`read_samples`) skip a torn last line and never modify the file: a run being
compared may still be written by its scan.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from loopfix.detect.verdict import LoopVerdict
from loopfix.errors import LoopfixError, field_problem

FinishReason = Literal["stop", "length", "repetition", "error"]
Temperature = Annotated[
    float, Field(ge=0.0, allow_inf_nan=False, description="sampling temperature; 0 = greedy")
]
MAX_PROMPTS = 100_000
"""The most prompts (or graphs) one run takes: a built-in suite is generated whole before the
first sample, so a count like 10**12 must be refused, not allocated."""


class SamplerSettings(BaseModel):
    """The sampler's settings that one sample and a whole scan share (defined once, here)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    top_p: float = Field(1.0, gt=0.0, le=1.0, description="nucleus sampling mass")
    top_k: int = Field(0, ge=0, description="keep the k most likely tokens; 0 = off")
    min_p: float = Field(0.0, ge=0.0, le=1.0, description="drop tokens below min_p * p_top1")
    repetition_penalty: float = Field(1.0, gt=0.0, description="HF repetition penalty; 1 = off")
    presence_penalty: float = Field(
        0.0, ge=-2.0, le=2.0, description="OpenAI presence penalty on generated tokens; 0 = off"
    )
    frequency_penalty: float = Field(
        0.0, ge=-2.0, le=2.0, description="OpenAI frequency penalty on generated tokens; 0 = off"
    )
    seed: int = Field(
        0, description="run seed: the built-in suites' prompts and every sample's sampler seed"
    )


class DecodeSettings(SamplerSettings):
    """How one sample was decoded. Temperature 0 means greedy."""

    temperature: Temperature = 0.0
    max_new_tokens: int = Field(256, ge=1, description="generation cap (a 'cut' when reached)")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def key(self) -> str:
        """A stable string that identifies these settings (used for grouping and resuming)."""
        return json.dumps(self.model_dump(), sort_keys=True)


@dataclass(frozen=True)
class Sample:
    """One generated continuation of one prompt under one decode setting."""

    prompt_id: str
    sample_index: int
    # `DecodeSettings.model_dump()` as it was stored: kept as written (not re-validated with
    # today's fields, an int not made a float), since `key` must match the key a resumed run
    # wrote.
    settings: dict[str, int | float]
    tokens: list[Annotated[int, Field(ge=0)]]
    text: str
    finish_reason: FinishReason
    loop: LoopVerdict | None = None  # the detector's verdict (None: not judged)
    correct: bool | None = None
    # Open by design: what each backend and stage adds (counts, outcome, guards, overlong).
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def length(self) -> int | None:
        """Generated tokens: the ids held, else the count a server reported (`meta`
        "completion_tokens"), else None (unknown; never guessed as 0)."""
        if self.tokens:
            return len(self.tokens)
        count = self.meta.get("completion_tokens")
        if isinstance(count, int):
            return count
        return None if self.text else 0

    @property
    def looping(self) -> bool:
        """Whether the detector found a loop (False when it did not judge this sample)."""
        return self.loop is not None and self.loop.looping

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.prompt_id, self.sample_index, json.dumps(self.settings, sort_keys=True))

    def to_dict(self) -> dict[str, object]:
        """The records.jsonl line (the verdict as `LoopVerdict.to_dict()`, plus `length`)."""
        return {
            **asdict(self),
            "loop": None if self.loop is None else self.loop.to_dict(),
            "length": self.length,
        }


# Strict: a line holds what `to_dict` writes (its `length` is ignored), every type as written.
_LINE = TypeAdapter(Sample)


class RecordError(LoopfixError, ValueError):
    """A store line that is not a valid Sample; names the file, line and field."""


def read_samples(path: Path) -> Iterator[Sample]:
    """The complete records of a store, read without modifying it (a last line without its
    newline is a sample still being written, or torn: skipped)."""
    path = Path(path)
    if not path.exists():
        return
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.endswith(b"\n"):
                return
            try:
                yield _LINE.validate_json(line, strict=True)
            except ValidationError as error:
                raise RecordError(field_problem(f"{path}:{number}", error, "a sample")) from None


class SampleStore:
    """Append-only JSON-lines file of Samples that survives being killed mid-write; opening one
    is for writing (it cuts a torn last line). Readers use `read_samples`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()

    def _drop_torn_tail(self) -> None:
        # A line is only complete once its newline is written; anything after the last newline
        # is the sample that was in flight when the writer died.
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end != len(data):
            with self.path.open("r+b") as handle:
                handle.truncate(end)

    def __iter__(self) -> Iterator[Sample]:
        return read_samples(self.path)

    def keys(self) -> set[tuple[str, int, str]]:
        return {sample.key for sample in self}

    def append(self, samples: Iterable[Sample]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            for sample in samples:
                handle.write(json.dumps(sample.to_dict(), ensure_ascii=False) + "\n")
                handle.flush()
            os.fsync(handle.fileno())

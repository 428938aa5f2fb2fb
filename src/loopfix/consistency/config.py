"""`ConsistencyConfig`: which checks to run, on which prompts, over which factors.

Every default lives here, with a description. The thresholds were fixed before any measurement
(they are not tuned on our outputs): `near_tie` is the gap the vLLM-vs-HF greedy tests already
use, `pool_collapse_share` is "most steps".
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from loopfix.errors import LoopfixError
from loopfix.records import MAX_PROMPTS
from loopfix.urls import ServerUrl
from loopfix.vllm_venv import VLLM_PYTHON

__all__ = ["CHEAP_CHECKS", "CHECK_NAMES", "ConsistencyConfig", "ConsistencyError"]

CHECK_NAMES: tuple[str, ...] = (
    "determinism",
    "batch_invariance",
    "seed_sensitivity",
    "sampling_pool",
    "context",
    "precision",
    "backend",
    "loop_stability",
)
CHEAP_CHECKS: tuple[str, ...] = ("determinism", "batch_invariance", "seed_sensitivity")
"""Checks that need no second model copy, no other process, no grid and no long prompts: what
`doctor` runs. `context` is left out: its preamble fills half the window, thousands of tokens
per prompt on a real model (SmolLM2: 8,192), which took minutes where the rest takes seconds."""


class ConsistencyError(LoopfixError, ValueError):
    """Input the consistency checks cannot use (one line, naming the field)."""


class ConsistencyConfig(BaseModel):
    """One consistency run; every field is a CLI flag of `loopfix consistency`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(description="folder, hub id or loopfix:NAME (local weights are needed)")
    suite: str = Field("stargraph", description="built-in suite name or JSON-lines file")
    n: int = Field(
        32, ge=1, le=MAX_PROMPTS, description="prompts (built-in suites: how many to generate)"
    )
    checks: list[str] = Field(list(CHECK_NAMES), min_length=1, description="checks to run")
    seed: int = Field(0, description="seed of the built-in suites and the first sampling seed")
    seeds: int = Field(3, ge=2, description="sampling seeds compared by seed_sensitivity")
    temperatures: list[float] = Field(
        [0.0, 0.3, 1.0], description="temperatures of seed_sensitivity and pool (at least one)"
    )
    batch_sizes: list[int] = Field(
        [8, 32], min_length=1, description="greedy batch sizes compared with batch 1"
    )
    top_k: list[int] = Field([0, 20], min_length=1, description="sampling_pool top-k values")
    top_p: list[float] = Field([1.0, 0.9], min_length=1, description="sampling_pool top-p values")
    min_p: list[float] = Field([0.0, 0.1], min_length=1, description="sampling_pool min-p values")
    max_new_tokens: int = Field(64, ge=1, description="generation cap of every run")
    near_tie: float = Field(
        0.02,
        gt=0.0,
        lt=1.0,
        description="a divergence is a near-tie when the top-2 probability gap there is below this",
    )
    pool_collapse_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="sampling_pool warns where the pool is one token on more than this share "
        "of steps",
    )
    compare_threads: bool = Field(
        True,
        description="determinism also runs greedy on another torch thread count (2 when on 1, "
        "else 1); on an oversubscribed machine a second thread costs far more than it measures",
    )
    preamble_share: float = Field(
        0.5,
        gt=0.0,
        lt=1.0,
        description="context: the long preamble fills this share of the window left by each prompt",
    )
    template: bool | None = Field(
        None,
        description="render prompts with the chat template (True: required, an error without "
        "one; False: raw text; None: when the tokenizer has one)",
    )
    vllm_python: Path = Field(
        VLLM_PYTHON,
        description="python of the vLLM venv; backend's vLLM arm is skipped when it is absent",
    )
    url: ServerUrl | None = Field(None, description="OpenAI-compatible server compared by backend")
    model_name: str | None = Field(None, description="served model name at url")
    out: Path = Field(Path("consistency"), description="folder for consistency.json, report.html")

    @field_validator("checks")
    @classmethod
    def _known_checks(cls, checks: list[str]) -> list[str]:
        unknown = [name for name in checks if name not in CHECK_NAMES]
        if unknown:
            raise ValueError(f"unknown check {unknown[0]!r}; choose from {', '.join(CHECK_NAMES)}")
        return checks

    @field_validator("batch_sizes")
    @classmethod
    def _positive(cls, sizes: list[int]) -> list[int]:
        if any(size < 1 for size in sizes):
            raise ValueError(f"batch sizes must be >= 1, got {sizes}")
        return sizes

    @field_validator("temperatures")
    @classmethod
    def _non_negative(cls, temperatures: list[float]) -> list[float]:
        if not temperatures:
            raise ValueError("at least one temperature is needed, e.g. 0,1")
        if any(t < 0 for t in temperatures):
            raise ValueError(f"temperatures must be >= 0, got {temperatures}")
        return temperatures

    @property
    def sampled_temperatures(self) -> list[float]:
        return [t for t in self.temperatures if t > 0]

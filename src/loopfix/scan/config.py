"""`ScanConfig`: everything a scan needs, one field per CLI flag, and the run's identity.

The identity is the part of the configuration that decides which records a run holds; with the
suite's and the model's content hashes (`scan.identity`) it is written to `DIR/scan.json` by the
first run; a later run into the same DIR must match it (then it resumes), otherwise it is
refused, so one store never mixes two experiments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, JsonValue

from loopfix.errors import LoopfixError
from loopfix.records import MAX_PROMPTS, DecodeSettings, SamplerSettings, Temperature
from loopfix.urls import ModelReference

__all__ = ["ConfigMismatchError", "NothingGeneratedError", "ScanConfig"]

# Execution details that do not change a single record: safe to change between resumes.
_NOT_IDENTITY = {
    "out",
    "ray_address",
    "concurrency",
    "device",
    "api_key_env",
    "timeout",
    "trust_remote_code",
}


class ConfigMismatchError(LoopfixError, ValueError):
    """A scan directory that already holds a run with another configuration."""


class NothingGeneratedError(LoopfixError, ValueError):
    """A scan where no sample could be generated; says which option to change."""


class ScanConfig(SamplerSettings):
    """One scan: which model, which prompts, which decode settings, where to write (the
    sampler's fields come from `SamplerSettings`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    model: ModelReference = Field(
        description="folder, hub id, loopfix:NAME, or a base URL (openai)"
    )
    suite: str = Field("stargraph", description="built-in suite name or JSON-lines file")
    n: int | None = Field(
        None, ge=1, le=MAX_PROMPTS, description="items of the suite (built-in default: 50)"
    )
    temperatures: list[Temperature] = Field(
        [0.0, 0.6, 1.0], min_length=1, description="sampling temperatures; 0 = greedy"
    )
    samples: int = Field(1, ge=1, description="samples per prompt and temperature")
    max_new_tokens: int | None = Field(
        None,
        ge=1,
        description="cap; an output that reaches it is cut. Unset: what fits the model (its "
        "generation config, else its context minus the longest prompt)",
    )
    think: bool | None = Field(None, description="enable_thinking for chat templates; None: unset")
    backend: Literal["hf", "vllm", "openai"] = Field(
        "hf",
        description="hf (our decode engine, real rollback), vllm (run from .venv-vllm) or "
        "openai (a server; scan only)",
    )
    model_name: str | None = Field(None, description="served model name (openai backend)")
    api: Literal["chat", "completions"] = Field("chat", description="openai endpoint")
    api_key_env: str = Field("OPENAI_API_KEY", description="env variable holding the API key")
    batch_size: int = Field(
        16,
        ge=1,
        description="rows decoded together (hf engine), requests per vllm call, or per store "
        "write (openai)",
    )
    concurrency: int = Field(8, ge=1, description="requests in flight (openai backend)")
    timeout: float = Field(600.0, gt=0, description="seconds per request (openai backend)")
    capture: bool = Field(False, description="record per-step top-1 probability and entropy")
    warning: str | None = Field(
        None,
        description="a `loopfix warn` probe (warning_probe.json) the hf engine reads while "
        "generating: meta.warning_step per sample; an `early` rescue acts on it",
    )
    device: str | None = Field(None, description="cpu, cuda, ... (default: best available)")
    dtype: str | None = Field(
        None, description="float32, bfloat16, ... (default: float32 on CPU, else the checkpoint's)"
    )
    trust_remote_code: bool = Field(
        False, description="run the Python code a hub model ships with (hf and vllm backends)"
    )
    ray_address: str | None = Field(None, description="Ray cluster address, or 'local'")
    out: Path = Field(Path("scan"), description="run directory (resumes when it matches)")

    def decode_settings(self, max_new_tokens: int) -> list[DecodeSettings]:
        """One DecodeSettings per temperature, in the order given, with the cap in force."""
        shared = {name: getattr(self, name) for name in SamplerSettings.model_fields}
        return [
            DecodeSettings(temperature=t, max_new_tokens=max_new_tokens, **shared)
            for t in self.temperatures
        ]

    def identity(self) -> dict[str, JsonValue]:
        """The settings that decide which records a run holds, as JSON (scan.json's config)."""
        identity: dict[str, JsonValue] = self.model_dump(mode="json", exclude=_NOT_IDENTITY)
        return identity

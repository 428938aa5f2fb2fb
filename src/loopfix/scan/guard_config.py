"""`CompareConfig`: the settings of `loopfix compare` (pydantic only, so the CLI reads its
defaults without loading a model library)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loopfix.scan.config import ScanConfig

__all__ = ["CompareConfig"]


class CompareConfig(BaseModel):
    """One comparison: the scan settings shared by every guard, and the guards."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scan: ScanConfig = Field(description="model, suite, n, seed, temperatures, out, backend")
    guards: list[str] = Field(
        ["none", "penalty", "dry", "ngram", "entropy-temp", "adaptive-temp", "rescue"],
        min_length=1,
        description="guard specs to compare, each a chain like 'rescue+dry'",
    )
    guard_args: dict[str, Any] = Field({}, description="'guard.parameter' -> value")

    def identity(self) -> dict[str, Any]:
        return {
            "guards": self.guards,
            "guard_args": self.guard_args,
            "scan": self.scan.model_dump(mode="json", exclude={"out", "temperatures"}),
        }

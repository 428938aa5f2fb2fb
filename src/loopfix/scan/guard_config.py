"""`CompareConfig`: the settings of `loopfix compare` (pydantic only, so the CLI reads its
defaults without loading a model library)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from loopfix.guards.args import GuardArg
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
    guard_args: dict[str, GuardArg] = Field({}, description="'guard.parameter' -> value")

    def identity(self) -> dict[str, JsonValue]:
        """compare.json: what decides the runs a comparison holds."""
        identity: dict[str, JsonValue] = self.model_dump(
            mode="json", include={"guards", "guard_args"}
        )
        identity["scan"] = self.scan.model_dump(mode="json", exclude={"out", "temperatures"})
        return identity

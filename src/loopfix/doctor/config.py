"""`DoctorConfig`: one field per `loopfix doctor` option, and what `--quick` shrinks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["QUICK", "DoctorConfig", "is_url"]

# What `--quick` sets (unless the option was given): a few prompts, a shorter cap, three guards,
# and the repair's smallest prompt sets, so a 135M-parameter model fits in minutes on 2 cores.
QUICK: dict[str, Any] = {"n": 12, "max_new_tokens": 160, "guards": ["none", "dry", "rescue"]}


def is_url(model: str) -> bool:
    return model.startswith(("http://", "https://"))


class DoctorConfig(BaseModel):
    """One doctor run. `None` fields are filled by `resolved` from the suite and `quick`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(
        "loopfix:stargraph",
        description="folder, hub id, .gguf file, loopfix:NAME, or an OpenAI-compatible base URL",
    )
    out: Path = Field(Path("doctor"), description="folder for every stage's files")
    suite: str | None = Field(
        None, description="suite to measure on; None: stargraph for a testbed, else arith"
    )
    n: int | None = Field(None, ge=1, description="suite items (None: 50, or 12 with quick)")
    temperatures: list[float] = Field([0.0, 0.6, 1.0], min_length=1)
    seed: int = Field(12345, description="suite and sampler seed")
    max_new_tokens: int | None = Field(
        None, ge=1, description="length cap (None: 48 on the stargraph suite, else 256; quick 160)"
    )
    guards: list[str] | None = Field(
        None,
        description="guards compared at the loopiest temperature (None: none, penalty, dry, "
        "ngram, rescue; quick: none, dry, rescue)",
    )
    repair: bool = Field(True, description="run the repair stage (needs weights and loops)")
    min_loops: int = Field(
        8, ge=1, description="looping samples the measure stage must find before a repair runs"
    )
    batch_size: int = Field(16, ge=1, description="prompts per batch")
    model_name: str | None = Field(None, description="served model name (URL models)")
    quick: bool = Field(False, description="small sizes everywhere (see QUICK)")

    def resolved(self, testbed: bool) -> DoctorConfig:
        """Every `None` filled: from `QUICK` when quick, then from the suite."""
        update: dict[str, Any] = {}
        suite = self.suite or ("stargraph" if testbed else "arith")
        update["suite"] = suite
        quick = QUICK if self.quick else {}
        if self.n is None:
            update["n"] = quick.get("n", 50)
        if self.max_new_tokens is None:
            update["max_new_tokens"] = (
                48 if suite == "stargraph" else quick.get("max_new_tokens", 256)
            )
        if self.guards is None:
            update["guards"] = quick.get("guards", ["none", "penalty", "dry", "ngram", "rescue"])
        return self.model_copy(update=update)

    def identity(self) -> dict[str, Any]:
        """What decides the doctor's results: a rerun with another identity is refused."""
        return self.model_dump(mode="json", exclude={"out"})

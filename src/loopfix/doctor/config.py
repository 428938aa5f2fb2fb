"""`DoctorConfig`: one field per `loopfix doctor` option, and what `--quick` shrinks."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from loopfix.lab.stargraph import WALK_CAP
from loopfix.records import MAX_PROMPTS
from loopfix.repair.config import SUITE_CAP
from loopfix.urls import ModelReference
from loopfix.vllm_venv import VLLM_PYTHON

__all__ = [
    "GUARDS",
    "MODEL_SUITE",
    "QUICK",
    "QUICK_GUARDS",
    "REPAIR_LOOPS",
    "REPAIR_SIZES",
    "SIZES",
    "TOP_UP_MAX",
    "DoctorConfig",
]

# Sizes by suite when an option is not given. The star-graph testbed generates a thousand walks
# in seconds, and its repair needs a few hundred verification prompts to see a halving of loops;
# a real model pays seconds per answer. `--quick`: a few prompts, a shorter cap, three guards,
# so a 135M-parameter model fits in minutes on 2 cores.
SIZES: dict[str, dict[str, int]] = {
    "stargraph": {"n": 300, "max_new_tokens": WALK_CAP},
    "other": {"n": 50, "max_new_tokens": SUITE_CAP},
}
QUICK: dict[str, dict[str, int]] = {
    "stargraph": {"n": 100, "max_new_tokens": WALK_CAP},  # a walk is no shorter with --quick
    "other": {"n": 12, "max_new_tokens": 160},
}
# The suite of a model that is not a testbed: one a small chat model answers (SmolLM2: 55% at
# greedy on a held-out seed) and still loops on, so a fix shows as answers recovered; on `arith`
# SmolLM2 answers 1 in 120 and every fix could only be judged by loops (docs/suites-tasks.md).
MODEL_SUITE = "tasks"
GUARDS = ["none", "penalty", "dry", "ngram", "rescue"]
QUICK_GUARDS = ["none", "dry", "rescue"]


# The repair stage on a model that is not a testbed, sized for the doctor's budget (15 minutes
# for SmolLM2 on 2 cores, docs/doctor.md) where the standalone repair takes half an hour: its
# branches come from the measure scan, topped up with fresh prompts (seed + 1) to about
# REPAIR_LOOPS looping samples (at most TOP_UP_MAX times the measure's prompts); it verifies on
# 100 fresh prompts against 2 random controls (the standalone: 200 and 3) and takes the KL on
# 24 normal answers (48).
REPAIR_LOOPS = 40
TOP_UP_MAX = 2
REPAIR_SIZES: dict[str, int] = {"prompts": 100, "control_seeds": 2, "kl_walks": 24}

CONSISTENCY_DIR = "consistency"  # OUT/consistency: the consistency stage's json and report


def _by_suite(name: str) -> str:
    star, other = SIZES["stargraph"][name], SIZES["other"][name]
    quick_star, quick_other = QUICK["stargraph"][name], QUICK["other"][name]
    return (
        f"{star} on the stargraph suite, {other} elsewhere; --quick: {quick_star} and {quick_other}"
    )


class DoctorConfig(BaseModel):
    """One doctor run. `None` fields are filled by `resolved` from the suite and `quick`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: ModelReference = Field(
        "loopfix:stargraph",
        description="folder, hub id, .gguf file, loopfix:NAME, or an OpenAI-compatible base URL",
    )
    out: Path = Field(Path("doctor"), description="folder for every stage's files")
    suite: str | None = Field(
        None,
        description=f"suite to measure on; None: stargraph for a testbed, else {MODEL_SUITE}",
    )
    n: int | None = Field(
        None, ge=1, le=MAX_PROMPTS, description=f"suite items (default: {_by_suite('n')})"
    )
    temperatures: list[float] = Field([0.0, 0.6, 1.0], min_length=1)
    seed: int = Field(12345, description="suite and sampler seed")
    max_new_tokens: int | None = Field(
        None, ge=1, description=f"length cap (default: {_by_suite('max_new_tokens')})"
    )
    guards: list[str] | None = Field(
        None,
        description=f"guards compared at the loopiest temperature (default: {', '.join(GUARDS)}; "
        f"--quick: {', '.join(QUICK_GUARDS)})",
    )
    repair: bool = Field(True, description="run the repair stage (needs weights and loops)")
    consistency: bool = Field(
        True,
        description="run the cheap consistency checks (determinism, batch invariance, seeds, "
        "context; needs weights) and link their report",
    )
    min_loops: int = Field(
        8, ge=1, description="looping samples the measure stage must find before a repair runs"
    )
    batch_size: int = Field(16, ge=1, description="prompts per batch")
    measure_backend: Literal["auto", "hf", "vllm"] = Field(
        "auto",
        description="backend of the measure stage; auto: vllm (offline, the checkpoint's dtype, "
        "run under --vllm-python) when that python exists and the model is a local folder that "
        "our engine does not run on its compiled kernels (not a Llama) and not a star-graph "
        "testbed, else hf. The guards and repair stay on hf (rollback)",
    )
    vllm_python: Path = Field(
        VLLM_PYTHON,
        description="python of the vLLM venv (the measure stage's and the consistency checks')",
    )
    model_name: str | None = Field(None, description="served model name (URL models)")
    quick: bool = Field(False, description="a first look: few prompts, short cap, three guards")

    def resolved(self, testbed: bool) -> DoctorConfig:
        """Every `None` filled: by suite (the testbed's `stargraph` or any other) and `quick`."""
        suite = self.suite or ("stargraph" if testbed else MODEL_SUITE)
        sizes = (QUICK if self.quick else SIZES)["stargraph" if suite == "stargraph" else "other"]
        update: dict[str, str | int | list[str]] = {"suite": suite}
        for name in ("n", "max_new_tokens"):
            if getattr(self, name) is None:
                update[name] = sizes[name]
        if self.guards is None:
            update["guards"] = QUICK_GUARDS if self.quick else GUARDS
        return self.model_copy(update=update)

    def identity(self) -> dict[str, JsonValue]:
        """What decides the doctor's results: a rerun with another identity is refused."""
        return self.model_dump(mode="json", exclude={"out", "vllm_python"})

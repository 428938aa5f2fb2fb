"""`loopfix doctor`: the closed loop on one model.

Stages (each prints its time):
1. measure: success, loop rate, cut rate, legal moves and length at greedy and at T=1.0 on a few
   hundred fresh prompts, plus the confidence flywheel (default model: the bundled
   `loopfix:stargraph` testbed).
2. repair: `loopfix.repair.run_repair` into `OUT/repair` (patch, verify.json, report.md), with
   the verification and causal-check prompt sets cut to the doctor's own `n` so the whole run
   stays within a couple of minutes on a laptop CPU.
3. write `OUT/summary.json` (machine-readable; the repair's verdict and numbers are copied from
   its verify.json) and `OUT/report.md` (for a person).

Later stages (guard comparison) join this pipeline as they land.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers

import loopfix
from loopfix.lab.evaluate import LabEvaluation, evaluate_testbed
from loopfix.models import load_model
from loopfix.repair import RepairConfig, run_repair
from loopfix.repair.stages import StageClock

REPAIR_DIR = "repair"
_ARMS = ("base", "patched", "random_control")


class NotATestbedError(ValueError):
    """The doctor's first version only knows how to score star-graph walks."""


@dataclass(frozen=True)
class DoctorResult:
    evaluation: LabEvaluation
    repair: dict[str, Any] | None  # summary.json "repair" (from verify.json); None: skipped
    stages: dict[str, float]  # seconds per stage


def doctor_repair_config(n: int) -> RepairConfig:
    """The repair's defaults with both generated prompt sets cut to the doctor's `n` (1000 and
    500 by default; verification is half of a repair's time). 50 is the repair's floor."""
    prompts = max(n, 50)
    return RepairConfig(prompts=prompts, causal_prompts=prompts)


def repair_summary(verify: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The repair's verdict at its primary temperature, as written in its verify.json."""
    return {
        "folder": str(folder),
        "accepted": verify["accepted"],
        "verdict": verify["verdict"],
        "candidate": verify["candidate"]["label"],
        "temperature": verify["temperature"],
        "n": verify["n"],
        **{f"{arm}_loop_rate": verify[arm]["loop_rate"] for arm in _ARMS},
        **{f"{arm}_success": verify[arm]["accuracy"] for arm in _ARMS},
        "kl": verify["kl"],
        "touched_fraction": verify["touched_fraction"],
        "patch": verify["patch"],
    }


def run_doctor(
    model_spec: str = "loopfix:stargraph",
    out: Path = Path("doctor"),
    n: int = 300,
    seed: int = 12345,
    temperatures: Sequence[float] = (0.0, 1.0),
    on_batch: Callable[[int], None] | None = None,
    repair_config: RepairConfig | None = None,
    report: Callable[[str], None] = print,
    repair: bool = True,
) -> DoctorResult:
    """`repair_config` defaults to `doctor_repair_config(n)`; `report` gets the stage lines;
    `repair=False` measures only (the repair stage is most of the doctor's time)."""
    started = time.perf_counter()
    clock = StageClock(report)
    with clock.stage("measure"):
        model, tokenizer = load_model(model_spec)
        if "back" not in tokenizer.get_vocab():
            raise NotATestbedError(
                f"{model_spec} is not a star-graph testbed (its tokenizer has no 'back' token); "
                "this version of `loopfix doctor` runs on loopfix:stargraph, "
                "loopfix:stargraph-clean or a folder written by `loopfix lab train`"
            )
        evaluation = evaluate_testbed(
            model, tokenizer, n=n, seed=seed, temperatures=temperatures, on_batch=on_batch
        )
    out.mkdir(parents=True, exist_ok=True)
    repaired = None
    if repair:
        folder = out / REPAIR_DIR
        with clock.stage("repair"):
            verify = run_repair(
                model_spec, folder, repair_config or doctor_repair_config(n), report=report
            )
        repaired = {**repair_summary(verify, folder), "seconds": clock.seconds["repair"]}
    stages = dict(clock.seconds)
    summary = {
        "model": model_spec,
        **evaluation.to_dict(),
        "repair": repaired,
        "stages": stages,
        "seconds": round(time.perf_counter() - started, 1),
        "versions": {
            "loopfix": loopfix.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": platform.python_version(),
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "report.md").write_text(render_report(model_spec, evaluation, repaired))
    return DoctorResult(evaluation, repaired, stages)


def render_report(model_spec: str, evaluation: LabEvaluation, repair: dict[str, Any] | None) -> str:
    ratio = evaluation.max_new_tokens / evaluation.teacher_mean_length
    lines = [
        f"# loopfix doctor: {model_spec}",
        "",
        f"{evaluation.settings[0].n} fresh star-graph prompts (seed {evaluation.seed}), length "
        f"cap {evaluation.max_new_tokens} tokens ({ratio:.1f}x the teacher's mean walk). A loop "
        "is a walk that hits the cap while its tail is exactly periodic.",
        "",
        "| temperature | success | loop rate | cut rate | legal moves | mean length | failures |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in evaluation.settings:
        failures = ", ".join(f"{k} {v}" for k, v in row.outcomes.items() if k != "success" and v)
        lines.append(
            f"| {row.temperature:g} | {row.success:.1%} | {row.loop_rate:.1%} | {row.cut_rate:.1%} "
            f"| {row.legal_rate:.1%} | {row.mean_length:.1f} | {failures} |"
        )
    flywheel = ", ".join(f"{p:.2f}" for p in evaluation.flywheel)
    lines += [
        "",
        "Confidence flywheel, P(enter the same wrong arm again) after 1..6 verbatim repeats: "
        f"{flywheel}.",
        "",
    ]
    greedy = evaluation.settings[0]
    hottest = evaluation.settings[-1]
    if greedy.loop_rate > hottest.loop_rate:
        lines.append(
            f"Loops fall from {greedy.loop_rate:.1%} at T={greedy.temperature:g} to "
            f"{hottest.loop_rate:.1%} at T={hottest.temperature:g}: this model loops when decoding "
            "is (near-)deterministic."
        )
    return "\n".join(lines + _repair_lines(model_spec, repair)) + "\n"


def _repair_lines(model_spec: str, repair: dict[str, Any] | None) -> list[str]:
    if repair is None:
        return ["", "## Repair", "", "Skipped (`--no-repair`)."]
    rates = {arm: repair[f"{arm}_loop_rate"] for arm in _ARMS}
    success = {arm: repair[f"{arm}_success"] for arm in _ARMS}
    lines = [
        "",
        f"## Repair (`loopfix repair`, {repair['seconds']:.0f} s)",
        "",
        f"**{repair['verdict']}**",
        "",
        f"Candidate {repair['candidate']}, at T={repair['temperature']:g} on {repair['n']} "
        f"held-out prompts: loops {rates['base']:.1%} -> {rates['patched']:.1%} patched "
        f"(norm-matched random control {rates['random_control']:.1%}); success "
        f"{success['base']:.1%} -> {success['patched']:.1%} (control "
        f"{success['random_control']:.1%}). KL {repair['kl']:.4f} nats/token on normal text; "
        f"{repair['touched_fraction']:.2%} of the weights touched.",
        "",
    ]
    if repair["accepted"]:
        lines.append(
            f"The patch is `{repair['patch']}`; `loopfix patch apply {model_spec} "
            f"{repair['folder']} --out PATCHED` writes the patched model, and `loopfix patch "
            "revert` undoes it bit for bit."
        )
    else:
        lines.append(
            f"No patch is proposed; the rejected candidate is kept at `{repair['patch']}`."
        )
    lines.append(f"Every check and all temperatures: `{repair['folder']}/report.md`.")
    return lines

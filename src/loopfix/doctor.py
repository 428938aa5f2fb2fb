"""`loopfix doctor`: the closed loop on one model, first version.

Steps:
1. Load the model (default: the bundled `loopfix:stargraph` testbed).
2. Measure: success, loop rate, cut rate, legal moves and length at greedy and at T=1.0 on a few
   hundred fresh prompts, plus the confidence flywheel.
3. Write `OUT/summary.json` (machine-readable) and `OUT/report.md` (for a person).

Later stages (guard comparison, repair, verification) join this pipeline as they land.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import transformers

import loopfix
from loopfix.lab.evaluate import LabEvaluation, evaluate_testbed
from loopfix.models import load_model


class NotATestbedError(ValueError):
    """The doctor's first version only knows how to score star-graph walks."""


def run_doctor(
    model_spec: str = "loopfix:stargraph",
    out: Path = Path("doctor"),
    n: int = 300,
    seed: int = 12345,
    temperatures: Sequence[float] = (0.0, 1.0),
    on_batch: Callable[[int], None] | None = None,
) -> LabEvaluation:
    started = time.perf_counter()
    model, tokenizer = load_model(model_spec)
    if "back" not in tokenizer.get_vocab():
        raise NotATestbedError(
            f"{model_spec} is not a star-graph testbed (its tokenizer has no 'back' token); "
            "this version of `loopfix doctor` runs on loopfix:stargraph, loopfix:stargraph-clean "
            "or a folder written by `loopfix lab train`"
        )
    evaluation = evaluate_testbed(
        model, tokenizer, n=n, seed=seed, temperatures=temperatures, on_batch=on_batch
    )
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "model": model_spec,
        **evaluation.to_dict(),
        "seconds": round(time.perf_counter() - started, 1),
        "versions": {
            "loopfix": loopfix.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": platform.python_version(),
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "report.md").write_text(render_report(model_spec, evaluation))
    return evaluation


def render_report(model_spec: str, evaluation: LabEvaluation) -> str:
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
    return "\n".join(lines) + "\n"

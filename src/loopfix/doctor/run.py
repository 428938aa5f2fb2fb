"""`run_doctor`: the closed loop on one model.

Steps (each prints its time and peak memory, and is cached in OUT/stages/NAME.json so a killed
run, rerun with the same arguments, continues after the last finished stage; the scans inside
a stage resume too):
1. measure: `run_scan` of the suite at every temperature (T = 0, 0.6, 1.0) into OUT/measure,
   on the fastest backend present (`measure_backend_name`): our engine for a Llama checkpoint
   (its compiled kernels), offline vLLM in the checkpoint's dtype for others where
   .venv-vllm exists.
2. guards: `run_compare` of the guard set at the loopiest temperature into OUT/guards (skipped
   for a URL model, or when nothing looped).
3. repair + verify: `run_repair` into OUT/repair, whose verification (base vs patched vs
   norm-matched random controls, verify.json) is the verify stage (skipped without weights, with
   too few loops, or with `repair=False`); a screening pick that cannot pass stops it there.
   combined: an accepted patch alone and with the recommended guard, paired with the guard
   stage's unguarded run (`combined_stage`).
4. consistency: the cheap checks of `loopfix consistency` (determinism, batch invariance, seed
   sensitivity) on a few of the suite's prompts into OUT/consistency (skipped for a
   URL model, or with `consistency=False`): is a loop that shows up only sometimes explained
   by the run, not the model?
5. recommend: the setting and guard that recover the most answers without a significant loss
   (computed from measure and guards, before the repair, which the combined stage needs).
6. write OUT/summary.json, OUT/report.md and OUT/report.html.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from functools import partial
from typing import Any, Protocol, TypeVar

from pydantic import JsonValue

from loopfix.atomic import write_json_atomic, write_text_atomic
from loopfix.doctor.combined import combined_stage
from loopfix.doctor.config import DoctorConfig
from loopfix.doctor.recommend import recommend
from loopfix.doctor.report import render_html, render_markdown
from loopfix.doctor.result import (
    CombinedStage,
    ConsistencyStage,
    DoctorResult,
    GuardStage,
    MeasureStage,
    RepairStage,
    StageCost,
)
from loopfix.doctor.stages import (
    DoctorInputError,
    consistency_stage,
    guard_stage,
    measure_stage,
    repair_stage,
)
from loopfix.patch.build import software_versions
from loopfix.progress import ProgressFactory, line_progress
from loopfix.repair import RepairConfig
from loopfix.stages import StageClock

__all__ = ["run_doctor"]


class _StageResult(Protocol):
    def to_json(self) -> dict[str, JsonValue]: ...


ResultT = TypeVar("ResultT", bound=_StageResult)


class _StageCache:
    """Finished stages as OUT/stages/NAME.json: the result, its seconds and peak memory. The
    first finished stage claims OUT for the run's arguments (OUT/doctor.json), so a run that
    failed before it measured anything (a wrong model or option) leaves nothing that refuses
    the next; later runs with other arguments are refused (`_check_identity`)."""

    def __init__(self, config: DoctorConfig, clock: StageClock, report: Callable[[str], None]):
        self.out, self.identity = config.out, config.identity()
        self.folder, self.clock, self.report = config.out / "stages", clock, report
        self.costs: dict[str, StageCost] = {}

    def run(
        self,
        name: str,
        compute: Callable[[], ResultT],
        load: Callable[[Any], ResultT],  # from the cached result, as parsed JSON
    ) -> ResultT:
        path = self.folder / f"{name}.json"
        if path.is_file():
            try:
                cached = json.loads(path.read_text())
                loaded, cost = load(cached["result"]), StageCost(**cached["cost"])
            except (ValueError, KeyError, TypeError) as error:
                # An older loopfix's shape, or a damaged file: the stage is run again, not
                # read as something it is not.
                self.report(f"[{name}] {path} cannot be read ({error!r}): running it again")
            else:
                self.costs[name] = cost
                self.report(f"[{name}] finished by an earlier run ({cost.seconds:.1f} s)")
                return loaded
        with self.clock.stage(name):
            result = compute()
        self.costs[name] = StageCost(self.clock.seconds[name], self.clock.peak_mib[name])
        self.folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.out / "doctor.json", self.identity)
        write_json_atomic(path, {"result": result.to_json(), "cost": asdict(self.costs[name])})
        return result


def _check_identity(config: DoctorConfig) -> None:
    """Refuse an OUT that holds a doctor run with other arguments (it would be mixed in)."""
    path = config.out / "doctor.json"
    identity = config.identity()
    if path.is_file() and (stored := json.loads(path.read_text())) != identity:
        changed = sorted(k for k in identity if identity[k] != stored.get(k))
        raise DoctorInputError(
            f"{config.out} holds a doctor run with other arguments ({', '.join(changed)}); "
            "rerun with the same arguments to continue it, or choose another --out"
        )


def run_doctor(
    config: DoctorConfig,
    report: Callable[[str], None] = print,
    progress: ProgressFactory | None = None,
    repair_config: RepairConfig | None = None,
) -> DoctorResult:
    """Run (or continue) the doctor `config` describes; see the module docstring for the
    steps. `report` gets the stage lines and the repair's progress; `progress` (by default
    lines through `report`) the measure scan's and each guard's; `repair_config` replaces the
    repair's derived settings."""
    if progress is None:
        progress = partial(line_progress, report=report)
    _check_identity(config)
    clock = StageClock(report)
    cache = _StageCache(config, clock, report)

    measured = cache.run(
        "measure",
        lambda: measure_stage(config, progress("measure"), report),
        MeasureStage.from_json,
    )
    # The measured config has every default filled; a moved OUT keeps working from where it is.
    final = measured.config.model_copy(update={"out": config.out})
    guards = cache.run(
        "guards", lambda: guard_stage(final, measured, progress), GuardStage.from_json
    )
    recommendation = recommend(measured, guards)
    repair = cache.run(
        "repair",
        lambda: repair_stage(final, measured, report, repair_config),
        RepairStage.from_json,
    )
    combined = cache.run(
        "combined",
        lambda: combined_stage(final, guards, repair, recommendation, progress),
        CombinedStage.from_json,
    )
    consistency = cache.run(
        "consistency",
        lambda: consistency_stage(final, measured, report),
        ConsistencyStage.from_json,
    )
    result = DoctorResult(
        model=config.model,
        config=measured.config,
        measure=measured,
        guards=guards,
        repair=repair,
        combined=combined,
        consistency=consistency,
        recommendation=recommendation,
        stages=cache.costs,
        versions=software_versions(),
    )
    write_json_atomic(config.out / "summary.json", result.to_json())
    write_text_atomic(config.out / "report.md", render_markdown(result))
    write_text_atomic(config.out / "report.html", render_html(result))
    return result

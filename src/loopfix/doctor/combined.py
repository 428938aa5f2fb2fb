"""The doctor's patch + guard stage: what an accepted patch gives with the recommended guard.

The patched model is written as a folder (`loopfix patch apply`'s export) and compared with
`loopfix compare` at the guard stage's temperature on the same prompts and sampler seeds, with
no guard and with the recommended one; each arm is then paired with the guard stage's own run
without a guard on the unpatched model, so patch, guard and both are counted against one
reference, answers first (the columns of `loopfix compare`), and each is also paired with the
same guard's run on the unpatched model: what the patch adds to the guard, or costs it.
"""

from __future__ import annotations

from pathlib import Path

from loopfix.doctor.config import DoctorConfig
from loopfix.doctor.result import (
    CombinedArm,
    CombinedStage,
    GuardStage,
    Recommendation,
    RepairStage,
)
from loopfix.doctor.stages import scan_config
from loopfix.progress import ProgressFactory
from loopfix.records import read_samples

__all__ = ["combined_stage"]

BASELINE = "none"


def combined_stage(
    config: DoctorConfig,
    guards: GuardStage,
    repair: RepairStage,
    recommendation: Recommendation,
    progress: ProgressFactory | None = None,
) -> CombinedStage:
    if not repair.accepted or repair.patch is None:
        return CombinedStage.not_run("no accepted patch to combine")
    if guards.temperature is None or guards.folder is None:
        return CombinedStage.not_run(f"no guard stage to pair with ({guards.skipped})")
    from loopfix.patch import load_patch
    from loopfix.patch.export import export_patched
    from loopfix.scan.compare import compare_samples
    from loopfix.scan.guard_comparison import CompareConfig, run_compare

    guard = None if recommendation.guard == BASELINE else recommendation.guard
    folder = config.out / "combined"
    model = folder / "patched-model"
    if not (model / "config.json").is_file():
        export_patched(config.model, load_patch(Path(repair.patch).parent), model)
    scan = scan_config(config, folder / "compare", [guards.temperature]).model_copy(
        update={"model": str(model)}
    )
    specs = [BASELINE] if guard is None else [BASELINE, guard]
    patched = run_compare(CompareConfig(scan=scan, guards=specs), progress).entries
    # Each patched run paired with the unpatched model's run without a guard and with its run
    # of the same guard (the guard stage's), once: the stage's record keeps the pairs.
    unpatched = {e.guard: list(read_samples(Path(e.run) / "records.jsonl")) for e in guards.entries}
    rows = []
    for entry in patched:
        samples = list(read_samples(Path(entry.run) / "records.jsonl"))
        arm = "patch" if entry.guard == BASELINE else f"patch + {entry.guard}"
        base = compare_samples(unpatched[BASELINE], samples).overall
        alone = compare_samples(unpatched[entry.guard], samples).overall
        rows.append(CombinedArm(arm, entry, base, alone))
    return CombinedStage(guards.temperature, guard, str(folder), tuple(rows), None)

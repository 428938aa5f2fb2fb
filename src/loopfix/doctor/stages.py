"""The doctor's stages, each a function from what came before to its typed result.

measure: `run_scan` of the suite at every temperature -> guards: `run_compare` at the loopiest
temperature -> repair: `run_repair` (the testbed teacher's branches on a testbed, the measure
scan's records elsewhere), whose verification is the verify stage (verify.json) -> consistency:
the cheap checks of `run_consistency` on a few prompts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from loopfix.backends.base import Backend
from loopfix.doctor.config import CONSISTENCY_DIR, DoctorConfig, is_url
from loopfix.doctor.result import (
    ConsistencyStage,
    GuardStage,
    MeasureSetting,
    MeasureStage,
    RepairStage,
)
from loopfix.errors import LoopfixError
from loopfix.repair import RepairConfig, RepairInputError, run_repair
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.run import Progress

__all__ = [
    "CONSISTENCY_PROMPTS",
    "DoctorInputError",
    "consistency_stage",
    "doctor_repair_config",
    "guard_stage",
    "measure_stage",
    "open_measure_backend",
    "repair_stage",
    "scan_config",
]

CONSISTENCY_PROMPTS = 8
"""Prompts of the doctor's consistency stage: each check runs them several times over (seeds x
temperatures, three batch sizes), and a first divergence needs only one prompt to show."""


class DoctorInputError(LoopfixError, ValueError):
    """A doctor run that cannot measure anything as asked (one line: what to change)."""


def open_measure_backend(config: DoctorConfig) -> tuple[Backend, bool]:
    """The backend of the measure stage, and whether the model is a star-graph testbed (its
    tokenizer is the testbed's)."""
    if is_url(config.model):
        from loopfix.scan.backend import open_backend

        server = ScanConfig(
            model=config.model,
            backend="openai",
            model_name=config.model_name,
            batch_size=config.batch_size,
        )
        return open_backend(server), False
    from loopfix.backends.hf import HFBackend
    from loopfix.lab.tokenizer import is_testbed_tokenizer

    hf = HFBackend.load(config.model, batch_size=config.batch_size)
    return hf, is_testbed_tokenizer(hf.tokenizer)


def scan_config(config: DoctorConfig, out: Path, temperatures: list[float]) -> ScanConfig:
    assert config.suite is not None and config.max_new_tokens is not None
    return ScanConfig(
        model=config.model,
        suite=config.suite,
        n=config.n,
        temperatures=temperatures,
        seed=config.seed,
        max_new_tokens=config.max_new_tokens,
        batch_size=config.batch_size,
        backend="openai" if is_url(config.model) else "hf",
        model_name=config.model_name,
        out=out,
    )


def measure_stage(
    config: DoctorConfig, testbed: bool, backend: Backend, on_progress: Progress | None
) -> MeasureStage:
    """`config` resolved (every default filled)."""
    folder = config.out / "measure"
    result = run_scan(scan_config(config, folder, config.temperatures), backend, on_progress)
    # Nothing generated at all (every prompt over-long) is run_scan's one-line error.
    rows = result.summary["settings"]
    assert config.suite is not None and config.max_new_tokens is not None
    settings = [MeasureSetting.from_summary(row) for row in rows]
    return MeasureStage(
        config.suite,
        config.max_new_tokens,
        str(folder),
        settings,
        testbed,
        config.model_dump(mode="json"),
    )


def guard_stage(config: DoctorConfig, measure: MeasureStage) -> GuardStage:
    if is_url(config.model):
        return GuardStage(None, None, [], "the guards run in-process; a server applies its own")
    if measure.loops == 0:
        return GuardStage(
            None, None, [], "no sample looped: there is nothing for a guard to remove"
        )
    from loopfix.scan.guard_comparison import CompareConfig, run_compare

    temperature = measure.loopiest.temperature
    folder = config.out / "guards"
    compare = CompareConfig(
        scan=scan_config(config, folder, [temperature]), guards=config.guards or ["none"]
    )
    entries = run_compare(compare).to_dict()["entries"]
    return GuardStage(temperature, str(folder), entries, None)


def consistency_stage(config: DoctorConfig, measure: MeasureStage) -> ConsistencyStage:
    if not config.consistency:
        return ConsistencyStage(None, {}, "not asked for (--no-consistency)")
    if config.quick:
        # Measured on SmolLM2: 5.5 min for these checks against 1.5 min for measure + guards.
        return ConsistencyStage(
            None, {}, "--quick leaves it out; run `loopfix consistency MODEL` for it"
        )
    if is_url(config.model):
        return ConsistencyStage(None, {}, "a URL model: no local weights to rerun and compare")
    from loopfix.consistency import (
        CHEAP_CHECKS,
        ConsistencyConfig,
        run_consistency,
        write_consistency,
    )

    settings = ConsistencyConfig(
        model=config.model,
        suite=measure.suite,
        n=CONSISTENCY_PROMPTS,
        checks=list(CHEAP_CHECKS),
        seed=config.seed,
        # A second torch thread count is the costliest run and measures the machine's kernels,
        # which the doctor cannot change; `loopfix consistency` still runs it.
        compare_threads=False,
    )
    result = run_consistency(settings)
    paths = write_consistency(result, config.out / CONSISTENCY_DIR)
    statuses: dict[str, str] = {}
    for check in result.checks:
        statuses[check.name] = check.status
    return ConsistencyStage(str(paths["html"]), statuses, None)


def doctor_repair_config(n: int) -> RepairConfig:
    """On a testbed: the repair's defaults with both generated prompt sets cut to the doctor's
    `n` (1000 and 500 by default; verification is half of a repair's time). 50 is the floor."""
    prompts = max(n, 50)
    return RepairConfig(prompts=prompts, causal_prompts=prompts)


def _scan_repair_config(config: DoctorConfig, measure: MeasureStage) -> RepairConfig:
    """Elsewhere: branches from the measure scan's records, verified at the loopiest temperature
    only (a verification temperature is a third of the repair's generation)."""
    temperature = measure.loopiest.temperature
    assert config.max_new_tokens is not None
    return RepairConfig(
        suite=config.suite,
        records=Path(measure.scan) / "records.jsonl",
        max_new_tokens=config.max_new_tokens,
        temperature=temperature,
        temperatures=(temperature,),
        gen_batch_size=config.batch_size,
    )


def repair_stage(
    config: DoctorConfig,
    measure: MeasureStage,
    report: Callable[[str], None],
    repair_config: RepairConfig | None = None,
) -> RepairStage:
    """`repair_config` replaces the one derived from the doctor's (tests run a smaller one)."""
    if not config.repair:
        return RepairStage.not_run("--no-repair")
    if is_url(config.model):
        return RepairStage.not_run("a URL model has no weights to patch")
    if measure.loops < config.min_loops:
        return RepairStage.not_run(
            f"the measure stage found {measure.loops} looping sample(s); the repair builds its "
            f"branches from loops and needs at least {config.min_loops} (--min-loops)"
        )
    assert config.n is not None
    folder = config.out / "repair"
    if repair_config is None:
        repair_config = (
            doctor_repair_config(config.n)
            if measure.testbed
            else _scan_repair_config(config, measure)
        )
    try:
        verify = run_repair(config.model, folder, repair_config, report=report)
    except RepairInputError as error:
        return RepairStage.not_run(str(error))
    return RepairStage(
        accepted=verify.accepted,
        verdict=verify.verdict,
        verify=str(verify.verify_json),
        folder=str(folder),
        temperature=verify.temperature,
        n=verify.n,
        loop_rate=verify.loop_rate,
        accuracy=verify.accuracy,
        kl=verify.kl,
        touched_fraction=verify.touched_fraction,
        patch=str(verify.patch),
        skipped=None,
    )

"""The doctor's stages, each a function from what came before to its typed result.

measure: `run_scan` of the suite at every temperature (on vLLM where it is installed, see
`measure_backend_name`) -> guards: `run_compare` at the loopiest
temperature -> repair: `run_repair` (the testbed teacher's branches on a testbed, the measure
scan's records elsewhere), whose verification is the verify stage (verify.json) -> consistency:
the cheap checks of `run_consistency` on a few prompts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from loopfix.backends.base import Backend
from loopfix.doctor.config import (
    CONSISTENCY_DIR,
    REPAIR_LOOPS,
    REPAIR_SIZES,
    TOP_UP_MAX,
    DoctorConfig,
)
from loopfix.doctor.result import ConsistencyStage, GuardStage, MeasureStage, RepairStage, loopiest
from loopfix.errors import LoopfixError
from loopfix.progress import Progress, ProgressFactory, line_progress
from loopfix.records import read_samples
from loopfix.repair import RepairConfig, RepairInputError, run_repair
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.compare import compare_samples
from loopfix.suites import BUILTIN_SUITES
from loopfix.summaries import Paired, ScanSummary, SettingSummary
from loopfix.urls import is_url

__all__ = [
    "CONSISTENCY_PROMPTS",
    "DoctorInputError",
    "consistency_stage",
    "doctor_repair_config",
    "guard_stage",
    "measure_backend_name",
    "measure_pairs",
    "measure_stage",
    "open_measure_backend",
    "repair_stage",
    "scan_config",
    "top_up_prompts",
    "top_up_scan",
]

CONSISTENCY_PROMPTS = 8
"""Prompts of the doctor's consistency stage: each check runs them several times over (seeds x
temperatures, three batch sizes), and a first divergence needs only one prompt to show."""


class DoctorInputError(LoopfixError, ValueError):
    """A doctor run that cannot measure anything as asked (one line: what to change)."""


def measure_backend_name(config: DoctorConfig) -> str:
    """`config.measure_backend` with `auto` decided: openai for a URL; vllm when its python
    exists, the run is not `--quick` and the model is a local folder that our engine does not
    run on its compiled kernels; else hf. A star-graph testbed generates in seconds on hf, less
    than vLLM takes to start, and so does a quick look at a small model (on SmolLM2 the quick
    measure, 36 samples at cap 160, took 49 s on hf and 78 s on vLLM); and on a Llama checkpoint
    the engine's compiled kernels outpace vLLM-CPU (SmolLM2's default measure, 150 samples at
    cap 256: 130 s on hf, 174 s on vLLM; docs/doctor.md)."""
    if is_url(config.model):
        return "openai"
    if config.measure_backend != "auto":
        return config.measure_backend
    if not config.vllm_python.is_file() or config.quick:
        return "hf"
    import torch
    from transformers import AutoConfig, AutoTokenizer

    from loopfix.engine.fast.llama_fused import kernels_for, serves
    from loopfix.lab.tokenizer import is_testbed_tokenizer
    from loopfix.models import resolve_model_path

    folder = Path(resolve_model_path(config.model))
    if not folder.is_dir():  # a hub id: vLLM would download it; hf reads the hub cache
        return "hf"
    if is_testbed_tokenizer(AutoTokenizer.from_pretrained(folder)):
        return "hf"
    checkpoint = AutoConfig.from_pretrained(folder)
    # float32: what the hf measure loads on CPU (`load_model`'s default there).
    compiled = serves(checkpoint) and kernels_for(checkpoint, torch.float32) is not None
    return "hf" if compiled else "vllm"


def open_measure_backend(config: DoctorConfig) -> tuple[Backend, bool]:
    """The in-process backend of the measure stage (hf or openai), and whether the model is a
    star-graph testbed (its tokenizer is the testbed's)."""
    from loopfix.backends.open import open_backend
    from loopfix.scan.backend import backend_spec

    if is_url(config.model):
        server = ScanConfig(
            model=config.model,
            backend="openai",
            model_name=config.model_name,
            batch_size=config.batch_size,
        )
        return open_backend(backend_spec(server)), False
    from loopfix.backends.spec import BackendSpec
    from loopfix.lab.tokenizer import is_testbed_tokenizer

    hf = open_backend(BackendSpec("hf", config.model, config.batch_size))
    return hf, is_testbed_tokenizer(hf.tokenizer)


def scan_config(
    config: DoctorConfig, out: Path, temperatures: list[float], backend: str | None = None
) -> ScanConfig:
    """The scan a stage runs; `backend` None: hf, or openai for a URL."""
    assert config.suite is not None and config.max_new_tokens is not None
    return ScanConfig(
        model=config.model,
        suite=config.suite,
        n=config.n,
        temperatures=temperatures,
        seed=config.seed,
        max_new_tokens=config.max_new_tokens,
        batch_size=config.batch_size,
        backend=backend or ("openai" if is_url(config.model) else "hf"),
        model_name=config.model_name,
        out=out,
    )


def measure_stage(
    config: DoctorConfig, on_progress: Progress | None, report: Callable[[str], None] = print
) -> MeasureStage:
    """`run_scan` of the suite at every temperature, on `measure_backend_name`'s backend. With
    `auto`, a model vLLM cannot run (its child dies before any record) is measured on hf."""
    folder = config.out / "measure"
    if measure_backend_name(config) == "vllm":
        from loopfix.scan.vllm_scan import VLLMScanFailed

        resolved = config.resolved(testbed=False)  # the choice of vllm excludes a testbed
        scan = scan_config(resolved, folder, resolved.temperatures, backend="vllm")
        try:
            summary = _scan_on_vllm(scan, resolved, on_progress)
            return _measured(resolved, False, folder, summary)
        except VLLMScanFailed as error:
            records = folder / "records.jsonl"
            if config.measure_backend == "vllm" or (records.is_file() and records.stat().st_size):
                raise
            report(f"[measure] {error}; measuring on hf instead")
            # the identity of a scan that generated nothing (none when vLLM died loading)
            (folder / "scan.json").unlink(missing_ok=True)
    backend, testbed = open_measure_backend(config)
    with backend:
        resolved = config.resolved(testbed)
        scan = scan_config(resolved, folder, resolved.temperatures)
        summary = run_scan(scan, backend, on_progress).summary
    return _measured(resolved, testbed, folder, summary)


def _scan_on_vllm(
    scan: ScanConfig, config: DoctorConfig, on_progress: Progress | None
) -> ScanSummary:
    import torch

    from loopfix.scan.vllm_scan import scan_under_vllm

    return scan_under_vllm(scan, config.vllm_python, torch.get_num_threads(), on_progress)


def _measured(
    config: DoctorConfig, testbed: bool, folder: Path, summary: ScanSummary
) -> MeasureStage:
    # Nothing generated at all (every prompt over-long) is run_scan's one-line error.
    assert config.suite is not None and config.max_new_tokens is not None
    ran = summary.backend  # what ran: the dtype is the one the checkpoint loaded in
    assert ran is not None  # run_scan records it
    paired, lengths = measure_pairs(folder / "records.jsonl", summary.settings)
    return MeasureStage(
        config.suite,
        config.max_new_tokens,
        str(folder),
        summary.settings,
        testbed,
        config,
        ran.name,
        ran.dtype,
        paired,
        lengths,
    )


def measure_pairs(
    records: Path, settings: tuple[SettingSummary, ...]
) -> tuple[dict[float, Paired], dict[float, tuple[int, ...]]]:
    """What the recommendation and the report need of the measure's records, read once: each
    other temperature paired with the loopiest on (prompt, sample), and the output lengths of
    the samples that generated, by temperature."""
    temperatures = [s.temperature for s in settings]
    samples = list(read_samples(records))
    runs = {t: [r for r in samples if r.settings["temperature"] == t] for t in temperatures}
    top = runs[loopiest(settings).temperature]
    paired = {}
    for temperature, run in runs.items():
        with suppress(ValueError):  # no pair: nothing generated at one of the two
            if run is not top:
                paired[temperature] = compare_samples(top, run).overall
    lengths = {
        t: tuple(r.length for r in run if r.finish_reason != "error" and r.length is not None)
        for t, run in runs.items()
    }
    return paired, lengths


def guard_stage(
    config: DoctorConfig, measure: MeasureStage, progress: ProgressFactory | None = None
) -> GuardStage:
    if is_url(config.model):
        return GuardStage.not_run("the guards run in-process; a server applies its own")
    if measure.loops == 0:
        return GuardStage.not_run("no sample looped: there is nothing for a guard to remove")
    from loopfix.scan.guard_comparison import CompareConfig, run_compare

    temperature = measure.loopiest.temperature
    folder = config.out / "guards"
    compare = CompareConfig(
        scan=scan_config(config, folder, [temperature]), guards=config.guards or ["none"]
    )
    entries = run_compare(compare, progress).entries
    return GuardStage(temperature, str(folder), entries, None)


def consistency_stage(
    config: DoctorConfig, measure: MeasureStage, report: Callable[[str], None] = print
) -> ConsistencyStage:
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
        vllm_python=config.vllm_python,
        # A second torch thread count is the costliest run and measures the machine's kernels,
        # which the doctor cannot change; `loopfix consistency` still runs it.
        compare_threads=False,
    )
    result = run_consistency(
        settings,
        on_check=lambda check: report(f"  {check.name}: {check.status}, {check.seconds:.0f} s"),
    )
    paths = write_consistency(result, config.out / CONSISTENCY_DIR)
    statuses: dict[str, str] = {check.name: check.status for check in result.checks}
    return ConsistencyStage(str(paths["html"]), statuses, None)


def doctor_repair_config(n: int, quick: bool) -> RepairConfig:
    """On a testbed: `loopfix repair`'s own defaults (1000 verification and 500 screening
    prompts: the testbed generates them in seconds, and at the doctor's 300 a patch that gives
    24 greedy answers back net could not be told from a control giving 12); with `--quick`
    both prompt sets cut to the doctor's `n`, 50 at least."""
    if not quick:
        return RepairConfig.preset("testbed")
    prompts = max(n, 50)
    return RepairConfig.preset("testbed", prompts=prompts, causal_prompts=prompts)


def _scan_repair_config(
    config: DoctorConfig, measure: MeasureStage, extra: tuple[Path, ...]
) -> RepairConfig:
    """Elsewhere: branches from the measure scan's records (and the top-up's, `extra`),
    verified at the loopiest temperature only, on `REPAIR_SIZES`' prompt and control counts."""
    temperature = measure.loopiest.temperature
    assert config.max_new_tokens is not None
    return RepairConfig.preset(
        "suite",
        suite=config.suite,
        records=Path(measure.scan) / "records.jsonl",
        extra_records=extra,
        max_new_tokens=config.max_new_tokens,
        temperature=temperature,
        temperatures=(temperature,),
        gen_batch_size=config.batch_size,
        **REPAIR_SIZES,
    )


def top_up_prompts(measure: MeasureStage, config: DoctorConfig) -> int:
    """Fresh prompts to scan so the repair has about `REPAIR_LOOPS` looping samples, at the
    measured loops per prompt; 0 when the measure holds enough, at most `TOP_UP_MAX` times the
    measure's prompts."""
    assert config.n is not None
    missing = REPAIR_LOOPS - measure.loops
    if missing <= 0 or measure.loops == 0:
        return 0
    return min(math.ceil(missing * config.n / measure.loops), TOP_UP_MAX * config.n)


def top_up_scan(
    config: DoctorConfig, measure: MeasureStage, report: Callable[[str], None]
) -> tuple[Path, ...]:
    """The top-up scan: fresh prompts of a built-in suite (seed + 1) at the measure's
    temperatures and cap into OUT/repair-top-up, when the measure found too few loops; on the
    measure's own backend, since the repair merges the two scans' records only when one backend
    generated both."""
    count = top_up_prompts(measure, config)
    if count == 0 or measure.suite not in BUILTIN_SUITES:
        return ()
    folder = config.out / "repair-top-up"
    on_vllm = measure.backend == "vllm"
    scan = scan_config(
        config, folder, config.temperatures, backend="vllm" if on_vllm else None
    ).model_copy(update={"seed": config.seed + 1, "n": count})
    report(
        f"[repair] {measure.loops} looping samples in the measure; scanning {count} more prompts "
        f"for about {REPAIR_LOOPS}"
    )
    progress = line_progress("top-up", report)
    if on_vllm:
        _scan_on_vllm(scan, config, progress)
    else:
        run_scan(scan, on_progress=progress)
    return (folder / "records.jsonl",)


def repair_stage(
    config: DoctorConfig,
    measure: MeasureStage,
    report: Callable[[str], None],
    repair_config: RepairConfig | None = None,
) -> RepairStage:
    """`repair_config` replaces the one derived from the doctor's (tests run a smaller one);
    off a testbed it gets the top-up scan's records too."""
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
    if measure.testbed:
        repair_config = repair_config or doctor_repair_config(config.n, config.quick)
    else:
        extra = top_up_scan(config, measure, report)
        repair_config = (
            _scan_repair_config(config, measure, extra)
            if repair_config is None
            else repair_config.model_copy(update={"extra_records": extra})
        )
    try:
        verify = run_repair(config.model, folder, repair_config, report=report)
    except RepairInputError as error:
        return RepairStage.not_run(str(error))
    return RepairStage(verify, skipped=None)

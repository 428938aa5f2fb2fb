"""`run_compare`: every guard on the same prompts and seeds, paired against "none".

Steps:
1. Check every guard spec and argument before anything loads (a typo fails in a second), and
   refuse an output directory that holds a comparison with other guards or arguments.
2. Load the model once: transformers (`hf`: every guard, "none" included, runs through the same
   decode engine with the same per-request seeds, so the pairs are exact at any temperature) or
   one vLLM engine with loopfix's logits processor (`vllm`: guards travel per request, `cut` as
   vLLM's native `repetition_detection`).
3. For each guard and temperature, run (or resume) one scan into `DIR/runs/GUARD/T` with the
   same suite, seeds and settings; what the guards did per sample (rescues with position and
   period, cuts) lands in each record's `meta.guards`, and the generation time in
   `timing.json`.
4. For each guard and temperature: the scan's own summary (loop, cut, accuracy, length), the
   pairs against "none" (rescues / regressions, McNemar), rescues performed, tokens per second,
   and its rank at that temperature (`answers_first`: answers recovered first).
5. Write `DIR/summary.json` and `DIR/report.html`; return the summary.

This module sits above `loopfix.scan` (the CLI imports it; nothing in `guards` does).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from loopfix.atomic import write_json_atomic
from loopfix.backends.base import Backend
from loopfix.backends.hf import HFBackend
from loopfix.backends.open import open_backend
from loopfix.backends.spec import GuardSpec
from loopfix.backends.timed import TimedBackend
from loopfix.backends.vllm import VLLMBackend
from loopfix.guard_summaries import RANKING, Answers, CompareResult, GuardEntry
from loopfix.guards.base import GuardError
from loopfix.progress import ProgressFactory
from loopfix.records import read_samples
from loopfix.scan.backend import backend_spec
from loopfix.scan.compare import compare_samples
from loopfix.scan.guard_config import CompareConfig
from loopfix.scan.run import run_scan
from loopfix.summaries import BackendRan, Paired, ScanSummary, SettingSummary

__all__ = [
    "RANKING",
    "SIGNIFICANCE",
    "CompareConfig",
    "CompareResult",
    "GuardEntry",
    "Ranked",
    "answers_first",
    "net_answers",
    "ranked",
    "run_compare",
    "significant_loss",
]

BASELINE = "none"
SIGNIFICANCE = 0.05  # a loss of answers counts when McNemar's exact p is below this


class Ranked(Protocol):
    """What the ranking reads: a guard's entry, or one of the doctor's candidates."""

    @property
    def summary(self) -> SettingSummary: ...

    @property
    def answers(self) -> Answers | None: ...  # None: nothing paired, ranks as 0 / 0


def net_answers(row: Ranked) -> int:
    """Answers recovered against the reference: rescues minus regressions (0 when unpaired)."""
    return 0 if row.answers is None else row.answers.net


def significant_loss(row: Ranked) -> bool:
    """More regressions than rescues, and McNemar's exact p below `SIGNIFICANCE`."""
    answers = row.answers
    if answers is None or answers.mcnemar_p is None:
        return False
    return answers.regressions > answers.rescues and answers.mcnemar_p < SIGNIFICANCE


def answers_first(row: Ranked) -> tuple[bool, int, int, float, float, float]:
    """The one ranking of guards (and of the doctor's candidates), smaller is better; see
    `RANKING`. A missing rate ranks as the worst. McNemar's p is a function of rescues and
    regressions, so after them it would break no tie: it enters as the significance of a
    loss."""
    summary = row.summary

    def worst(value: float | None, default: float) -> float:
        return default if value is None else value

    return (
        significant_loss(row),
        -net_answers(row),
        0 if row.answers is None else row.answers.regressions,
        worst(summary.cut_rate.value, 1.0),
        worst(summary.loop_rate.value, 1.0),
        worst(summary.mean_length, math.inf),
    )


RankedT = TypeVar("RankedT", bound=Ranked)


def ranked(rows: Iterable[RankedT]) -> list[RankedT]:
    """`rows` by temperature, then `answers_first`; ties keep their order."""
    return sorted(rows, key=lambda row: (row.summary.temperature, answers_first(row)))


def _check(config: CompareConfig) -> dict[str, GuardSpec]:
    """Every compared guard spec as given, "none" first, each parsed and validated once."""
    if config.scan.backend not in ("hf", "vllm") or config.scan.ray_address is not None:
        raise GuardError(
            "compare runs the guards in-process: use --backend hf or vllm (a server applies "
            "its own guards; scan it with loopfix scan --backend openai)"
        )
    specs = list(dict.fromkeys(config.guards))
    if BASELINE not in specs:
        specs.insert(0, BASELINE)  # everything is paired against it
    guards = {spec: GuardSpec.parse(spec, config.guard_args, shared=True) for spec in specs}
    mentioned = {key.partition(".")[0] for key in config.guard_args}
    unused = sorted(mentioned - {name for chain in guards.values() for name in chain.params})
    if unused:
        raise GuardError(f"--guard-arg for {', '.join(unused)}, which no compared guard uses")
    path = Path(config.scan.out) / "compare.json"
    if path.exists() and _stored_identity(path) != config.identity():
        raise GuardError(
            f"{path.parent} holds a comparison with other guards or settings; "
            "rerun with the same options to resume it, or choose another --out"
        )
    write_json_atomic(path, config.identity())
    return guards


class _Engines:
    """The weights, loaded once, and a backend over them for each compared guard spec."""

    def __init__(self, config: CompareConfig, guards: dict[str, GuardSpec]) -> None:
        scan = config.scan
        # vLLM: one engine for every guard; it carries the processor, requests carry the guards.
        loaded = open_backend(backend_spec(scan, processor=scan.backend == "vllm"))
        assert isinstance(loaded, HFBackend | VLLMBackend)  # `_check` refused the others
        self.loaded, self.guards = loaded, guards

    def ran_on(self) -> BackendRan:
        """The engine and the dtype it actually runs in: what a result may be compared with."""
        return BackendRan(self.loaded.name, self.loaded.dtype)

    def backend(self, spec: str) -> Backend:
        return self.loaded.with_guards(self.guards[spec])


def _run_one(
    config: CompareConfig,
    spec: str,
    temperature: float,
    engines: _Engines,
    progress: ProgressFactory | None,
) -> Path:
    out = Path(config.scan.out) / "runs" / spec / f"T{temperature:g}"
    scan = config.scan.model_copy(update={"temperatures": [temperature], "out": out})
    backend = TimedBackend(engines.backend(spec))
    on_progress = None if progress is None else progress(f"guard {spec} T={temperature:g}")
    result = run_scan(scan, backend=backend, on_progress=on_progress)
    timing = _read_json(out / "timing.json", {"tokens": 0, "seconds": 0.0})
    if result.generated:  # a resumed run adds what it generated to what was timed before
        timing = {
            "tokens": timing["tokens"] + backend.tokens,
            "seconds": timing["seconds"] + backend.seconds,
        }
        write_json_atomic(out / "timing.json", timing, indent=None)
    return out


def _stored_identity(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise GuardError(
            f"{path} is damaged ({error}), so the runs beside it cannot be matched to this "
            "comparison; move it away or choose another --out to start fresh"
        ) from None


def _read_json(path: Path, default: Any) -> Any:
    return json.loads(path.read_text()) if path.exists() else default


def _entry(spec: str, run: Path, baseline: Path) -> GuardEntry:
    summary = ScanSummary.from_json(json.loads((run / "summary.json").read_text())).settings[0]
    records = list(read_samples(run / "records.jsonl"))
    try:
        paired: Paired | None = compare_samples(
            list(read_samples(baseline / "records.jsonl")), records
        ).overall
    except ValueError:  # no generated pairs (every prompt over-long): nothing to compare
        paired = None
    timing = _read_json(run / "timing.json", {"tokens": 0, "seconds": 0.0})
    return GuardEntry(
        guard=spec,
        summary=summary,
        paired=paired,
        rescues_performed=sum(len(s.meta.get("guards", {}).get("rescues", [])) for s in records),
        tokens_per_s=timing["tokens"] / timing["seconds"] if timing["seconds"] else None,
        run=str(run),
    )


def _with_ranks(entries: Sequence[GuardEntry]) -> tuple[GuardEntry, ...]:
    """`entries` in their run order, each with its rank at its temperature."""
    order = ranked(entries)
    ranks = {
        id(entry): [e.temperature for e in order[:at]].count(entry.temperature) + 1
        for at, entry in enumerate(order)
    }
    return tuple(replace(entry, rank=ranks[id(entry)]) for entry in entries)


def _compare_entries(runs: Sequence[tuple[str, float, Path]]) -> tuple[GuardEntry, ...]:
    """The entries of finished runs, each (guard spec, temperature, scan folder), in that order:
    each read from its scan's summary and records, paired with the "none" run at its
    temperature, and ranked."""
    baselines = {temperature: run for spec, temperature, run in runs if spec == BASELINE}
    return _with_ranks([_entry(spec, run, baselines[t]) for spec, t, run in runs])


def run_compare(config: CompareConfig, progress: ProgressFactory | None = None) -> CompareResult:
    """Run (or resume) the comparison; see the module docstring for the steps. `progress`
    gives each guard's scan its progress callback."""
    from loopfix.report.guard_comparison import write_compare_report

    guards = _check(config)
    engines = _Engines(config, guards)
    runs: list[tuple[str, float, Path]] = []
    for temperature in config.scan.temperatures:
        runs += [
            (spec, temperature, _run_one(config, spec, temperature, engines, progress))
            for spec in guards
        ]
    baseline = next(run for spec, _, run in reversed(runs) if spec == BASELINE)
    notes = ScanSummary.from_json(json.loads((baseline / "summary.json").read_text())).notes
    result = CompareResult(
        model=config.scan.model,
        suite=config.scan.suite,
        config=config.identity(),
        backend=engines.ran_on(),
        temperatures=tuple(config.scan.temperatures),
        entries=_compare_entries(runs),
        notes=notes,
    )
    out = Path(config.scan.out)
    write_json_atomic(out / "summary.json", result.to_json())
    write_compare_report(out / "report.html", result)
    return result

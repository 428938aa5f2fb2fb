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
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from loopfix.atomic import write_json_atomic
from loopfix.backends.base import Backend
from loopfix.backends.hf import HFBackend
from loopfix.backends.open import open_backend
from loopfix.backends.spec import GuardSpec
from loopfix.backends.timed import TimedBackend
from loopfix.backends.vllm import VLLMBackend
from loopfix.guards.base import GuardError
from loopfix.progress import ProgressFactory
from loopfix.records import read_samples
from loopfix.scan.backend import backend_spec
from loopfix.scan.compare import compare_samples
from loopfix.scan.guard_config import CompareConfig
from loopfix.scan.run import run_scan
from loopfix.summaries import Paired, ScanSummary

__all__ = [
    "RANKING",
    "SIGNIFICANCE",
    "CompareConfig",
    "CompareResult",
    "GuardEntry",
    "answers_first",
    "net_answers",
    "ranked",
    "run_compare",
    "significant_loss",
]

BASELINE = "none"
SIGNIFICANCE = 0.05  # a loss of answers counts when McNemar's exact p is below this
RANKING = (
    "ranked per temperature by answers recovered against 'none': first every guard whose "
    "regressions significantly outnumber its rescues (McNemar exact p < 0.05) goes last; then "
    "the most net answers (rescues - regressions), then the fewest regressions, then the lowest "
    "cut rate, loop rate and mean length (tokens spent); without judged answers (no checker) "
    "rescues and regressions are all 0 and the cut rate decides"
)


def _number(row: Mapping[str, Any], key: str) -> int:
    value = row.get(key)
    return 0 if value is None else int(value)


def net_answers(row: Mapping[str, Any]) -> int:
    """Answers recovered against the reference: rescues minus regressions (0 when unpaired)."""
    return _number(row, "rescued_samples") - _number(row, "regressions")


def significant_loss(row: Mapping[str, Any]) -> bool:
    """More regressions than rescues, and McNemar's exact p below `SIGNIFICANCE`."""
    p = row.get("mcnemar_p")
    lost = _number(row, "regressions") > _number(row, "rescued_samples")
    return lost and p is not None and p < SIGNIFICANCE


def answers_first(row: Mapping[str, Any]) -> tuple[bool, int, int, float, float, float]:
    """The one ranking of guards (and of the doctor's candidates), smaller is better; see
    `RANKING`. `row` has GuardEntry's keys (`rescued_samples`, `regressions`, `mcnemar_p`,
    `cut_rate`, `loop_rate`, `mean_length`); a missing rate ranks as the worst. McNemar's p is
    a function of rescues and regressions, so after them it would break no tie: it enters as
    the significance of a loss."""

    def rate(key: str, worst: float) -> float:
        value = row.get(key)
        return worst if value is None else float(value)

    return (
        significant_loss(row),
        -net_answers(row),
        _number(row, "regressions"),
        rate("cut_rate", 1.0),
        rate("loop_rate", 1.0),
        rate("mean_length", math.inf),
    )


RowT = TypeVar("RowT", bound=Mapping[str, Any])


def ranked(rows: Iterable[RowT]) -> list[RowT]:
    """`rows` (entries as dicts) by temperature, then `answers_first`; ties keep their order."""
    return sorted(rows, key=lambda row: (row.get("temperature") or 0.0, answers_first(row)))


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

    def ran_on(self) -> dict[str, str | None]:
        """The engine and the dtype it actually runs in: what a result may be compared with."""
        return {"name": self.loaded.name, "dtype": self.loaded.dtype}

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


@dataclass(frozen=True)
class GuardEntry:
    """One guard at one temperature: its scan's rates, and its pairs against "none" (None when
    nothing could be paired)."""

    guard: str
    temperature: float
    n: int
    loop_rate: float | None
    cut_rate: float | None
    accuracy: float | None
    mean_length: float | None
    rescues: int  # rescues the guard performed, over all samples
    rescued_samples: int | None  # wrong under "none", right here
    regressions: int | None  # right under "none", wrong here
    mcnemar_p: float | None
    loops_removed: int | None
    loops_added: int | None
    tokens_per_s: float | None
    run: str  # the scan directory of this guard and temperature
    rank: int | None = None  # 1 = first at its temperature by `answers_first`


@dataclass(frozen=True)
class CompareResult:
    """What `run_compare` returns and writes to summary.json."""

    model: str
    suite: str
    config: dict[str, Any]
    backend: dict[str, str | None]  # what ran (vLLM's "auto" dtype resolved, say)
    temperatures: list[float]
    entries: list[GuardEntry]
    notes: list[str]  # how the runs were set up (a cap fitted to the model)
    rescues_and_regressions: str = (
        "paired against 'none' on (prompt, sample): a rescue is wrong there and right here, a "
        "regression the reverse"
    )
    ranking: str = RANKING

    def entry(self, guard: str, temperature: float) -> GuardEntry:
        return next(e for e in self.entries if e.guard == guard and e.temperature == temperature)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _entry(spec: str, temperature: float, run: Path, baseline: Path) -> GuardEntry:
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
        temperature=temperature,
        n=summary.n,
        loop_rate=summary.loop_rate.value,
        cut_rate=summary.cut_rate.value,
        accuracy=summary.accuracy.value,
        mean_length=summary.mean_length,
        rescues=sum(len(s.meta.get("guards", {}).get("rescues", [])) for s in records),
        rescued_samples=None if paired is None else paired.rescues,
        regressions=None if paired is None else paired.regressions,
        mcnemar_p=None if paired is None else paired.mcnemar_p,
        loops_removed=None if paired is None else paired.loops_removed,
        loops_added=None if paired is None else paired.loops_added,
        tokens_per_s=timing["tokens"] / timing["seconds"] if timing["seconds"] else None,
        run=str(run),
    )


def _with_ranks(entries: list[GuardEntry]) -> list[GuardEntry]:
    """`entries` in their run order, each with its rank at its temperature."""
    order = ranked(asdict(entry) | {"at": at} for at, entry in enumerate(entries))
    ranks: dict[int, int] = {}
    for row in order:
        same = [r for r in order if r["temperature"] == row["temperature"]]
        ranks[row["at"]] = same.index(row) + 1
    return [replace(entry, rank=ranks[at]) for at, entry in enumerate(entries)]


def run_compare(config: CompareConfig, progress: ProgressFactory | None = None) -> CompareResult:
    """Run (or resume) the comparison; see the module docstring for the steps. `progress`
    gives each guard's scan its progress callback."""
    from loopfix.report.guard_comparison import write_compare_report

    guards = _check(config)
    engines = _Engines(config, guards)
    entries = []
    notes: list[str] = []
    for temperature in config.scan.temperatures:
        runs = {spec: _run_one(config, spec, temperature, engines, progress) for spec in guards}
        entries += [_entry(spec, temperature, runs[spec], runs[BASELINE]) for spec in guards]
        notes = list(
            ScanSummary.from_json(json.loads((runs[BASELINE] / "summary.json").read_text())).notes
        )
    entries = _with_ranks(entries)
    result = CompareResult(
        model=config.scan.model,
        suite=config.scan.suite,
        config=config.identity(),
        backend=engines.ran_on(),
        temperatures=config.scan.temperatures,
        entries=entries,
        notes=notes,
    )
    out = Path(config.scan.out)
    write_json_atomic(out / "summary.json", result.to_dict())
    write_compare_report(out / "report.html", result.to_dict())
    return result

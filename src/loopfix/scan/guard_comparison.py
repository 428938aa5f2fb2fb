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
   pairs against "none" (rescues / regressions, McNemar), rescues performed, tokens per second.
5. Write `DIR/summary.json` and `DIR/report.html`; return the summary.

This module sits above `loopfix.scan` (the CLI imports it; nothing in `guards` does).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loopfix.atomic import write_json_atomic
from loopfix.backends.base import Backend, dtype_name
from loopfix.backends.timed import TimedBackend
from loopfix.guards.base import GuardContext, GuardError
from loopfix.guards.registry import guard_names, parse_guards
from loopfix.records import read_samples
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.compare import compare_samples

__all__ = ["CompareConfig", "run_compare"]

BASELINE = "none"


class CompareConfig(BaseModel):
    """One comparison: the scan settings shared by every guard, and the guards."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scan: ScanConfig = Field(description="model, suite, n, seed, temperatures, out, backend")
    guards: list[str] = Field(
        ["none", "penalty", "dry", "ngram", "entropy-temp", "adaptive-temp", "rescue"],
        min_length=1,
        description="guard specs to compare, each a chain like 'rescue+dry'",
    )
    guard_args: dict[str, Any] = Field({}, description="'guard.parameter' -> value")

    def identity(self) -> dict[str, Any]:
        return {
            "guards": self.guards,
            "guard_args": self.guard_args,
            "scan": self.scan.model_dump(mode="json", exclude={"out", "temperatures"}),
        }


def _check(config: CompareConfig) -> list[str]:
    if config.scan.backend not in ("hf", "vllm") or config.scan.ray_address is not None:
        raise GuardError(
            "compare runs the guards in-process: use --backend hf or vllm (a server applies "
            "its own guards; scan it with loopfix scan --backend openai)"
        )
    guards = list(dict.fromkeys(config.guards))
    if BASELINE not in guards:
        guards.insert(0, BASELINE)  # everything is paired against it
    mentioned = {key.partition(".")[0] for key in config.guard_args}
    in_specs = {name for spec in guards for name in parse_guards(spec).names}
    unused = sorted(mentioned - in_specs)
    if unused:
        raise GuardError(f"--guard-arg for {', '.join(unused)}, which no compared guard uses")
    for spec in guards:
        _chain(spec, config.guard_args, None)
    path = Path(config.scan.out) / "compare.json"
    if path.exists() and _stored_identity(path) != config.identity():
        raise GuardError(
            f"{path.parent} holds a comparison with other guards or settings; "
            "rerun with the same options to resume it, or choose another --out"
        )
    write_json_atomic(path, config.identity())
    return guards


def _chain(spec: str, guard_args: dict[str, Any], context: GuardContext | None) -> Any:
    return parse_guards(spec, _own_args(spec, guard_args), context)


def _own_args(spec: str, guard_args: dict[str, Any]) -> dict[str, Any]:
    names = set(guard_names(spec))
    return {k: v for k, v in guard_args.items() if k.partition(".")[0] in names}


class _Engines:
    """The loaded model, and a backend for one guard spec over it."""

    def __init__(self, config: CompareConfig) -> None:
        scan = config.scan
        self.config = config
        if scan.backend == "vllm":
            from loopfix.backends.vllm import VLLMBackend

            # One engine for every guard: it carries the processor, requests carry the guards.
            self.vllm = VLLMBackend.load(
                scan.model,
                batch_size=scan.batch_size,
                dtype=scan.dtype,
                processor=True,
                trust_remote_code=scan.trust_remote_code,
            )
        else:
            from loopfix.models import load_model

            self.model, self.tokenizer = load_model(
                scan.model,
                device=scan.device,
                dtype=scan.dtype,
                trust_remote_code=scan.trust_remote_code,
            )

    def ran_on(self) -> dict[str, str | None]:
        """The engine and the dtype it actually runs in: what a result may be compared with."""
        if self.config.scan.backend == "vllm":
            return {"name": "vllm", "dtype": self.vllm.dtype}
        return {"name": "hf", "dtype": dtype_name(self.model.dtype)}

    def backend(self, spec: str) -> Backend:
        args = self.config.guard_args
        if self.config.scan.backend == "vllm":
            from loopfix.backends.vllm import VLLMBackend

            return VLLMBackend(self.vllm.llm, self.vllm.batch_size, spec, _own_args(spec, args))
        from loopfix.backends.hf import HFBackend

        context = GuardContext.from_tokenizer(self.tokenizer, self.model.config.vocab_size)
        return HFBackend(
            self.model,
            self.tokenizer,
            self.config.scan.batch_size,
            build_chain=lambda: _chain(spec, args, context),
        )


def _run_one(config: CompareConfig, spec: str, temperature: float, engines: _Engines) -> Path:
    out = Path(config.scan.out) / "runs" / spec / f"T{temperature:g}"
    scan = config.scan.model_copy(update={"temperatures": [temperature], "out": out})
    backend = TimedBackend(engines.backend(spec))
    result = run_scan(scan, backend=backend)
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


def _entry(spec: str, temperature: float, run: Path, baseline: Path) -> dict[str, Any]:
    summary = _read_json(run / "summary.json", {})["settings"][0]
    records = list(read_samples(run / "records.jsonl"))
    try:
        paired = compare_samples(list(read_samples(baseline / "records.jsonl")), records)["overall"]
    except ValueError:  # no generated pairs (every prompt over-long): nothing to compare
        paired = dict.fromkeys(("rescues", "regressions", "mcnemar_p", "loops_removed"), None)
        paired["loops_added"] = None
    timing = _read_json(run / "timing.json", {"tokens": 0, "seconds": 0.0})
    return {
        "guard": spec,
        "temperature": temperature,
        "n": summary["n"],
        "loop_rate": summary["loop_rate"],
        "cut_rate": summary["cut_rate"],
        "accuracy": summary["accuracy"],
        "mean_length": summary["mean_length"],
        "rescues": sum(len(s.meta.get("guards", {}).get("rescues", [])) for s in records),
        "rescued_samples": paired["rescues"],
        "regressions": paired["regressions"],
        "mcnemar_p": paired["mcnemar_p"],
        "loops_removed": paired["loops_removed"],
        "loops_added": paired["loops_added"],
        "tokens_per_s": timing["tokens"] / timing["seconds"] if timing["seconds"] else None,
        "run": str(run),
    }


def run_compare(config: CompareConfig) -> dict[str, Any]:
    """Run (or resume) the comparison; see the module docstring for the steps."""
    from loopfix.report.guard_comparison import write_compare_report

    guards = _check(config)
    engines = _Engines(config)
    entries = []
    for temperature in config.scan.temperatures:
        runs = {spec: _run_one(config, spec, temperature, engines) for spec in guards}
        entries += [_entry(spec, temperature, runs[spec], runs[BASELINE]) for spec in guards]
    summary = {
        "model": config.scan.model,
        "suite": config.scan.suite,
        "config": config.identity(),
        "backend": engines.ran_on(),
        "temperatures": config.scan.temperatures,
        "rescues_and_regressions": "paired against 'none' on (prompt, sample): a rescue is "
        "wrong there and right here, a regression the reverse",
        "entries": entries,
    }
    out = Path(config.scan.out)
    write_json_atomic(out / "summary.json", summary)
    write_compare_report(out / "report.html", summary)
    return summary

"""`loopfix doctor`: measure, compare guards, repair, verify, recommend (any model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from loopfix.cli.common import at_least, console, parse_list, parse_temperatures, work_progress
from loopfix.doctor.config import DoctorConfig

_FIELDS = DoctorConfig.model_fields


def _default(name: str) -> Any:
    return _FIELDS[name].default


def _help(name: str) -> str:
    return _FIELDS[name].description or ""


_TEMPERATURES = ",".join(f"{value:g}" for value in _default("temperatures"))


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor_command)


def doctor_command(
    model: str = typer.Argument(_default("model"), help=_help("model")),
    suite: str | None = typer.Option(None, help=_help("suite")),
    n: int | None = typer.Option(None, help=_help("n")),
    temperatures: str = typer.Option(_TEMPERATURES, help="comma-separated temperatures"),
    seed: int = typer.Option(_default("seed"), help=_help("seed")),
    max_new_tokens: int | None = typer.Option(None, help=_help("max_new_tokens")),
    guards: str | None = typer.Option(None, help="comma-separated; " + _help("guards")),
    repair: bool = typer.Option(_default("repair"), help=_help("repair")),
    consistency: bool = typer.Option(_default("consistency"), help=_help("consistency")),
    min_loops: int = typer.Option(_default("min_loops"), help=_help("min_loops")),
    batch_size: int = typer.Option(_default("batch_size"), help=_help("batch_size")),
    measure_backend: str = typer.Option(_default("measure_backend"), help=_help("measure_backend")),
    vllm_python: Path = typer.Option(_default("vllm_python"), help=_help("vllm_python")),
    model_name: str | None = typer.Option(None, help=_help("model_name")),
    quick: bool = typer.Option(_default("quick"), "--quick", help=_help("quick")),
    out: Path = typer.Option(_default("out"), "--out", help=_help("out")),
    threads: int | None = typer.Option(None, help="torch CPU threads (default: torch's)"),
) -> None:
    """Measure loops, compare guards, repair, verify and recommend a setting for any model.

    Examples: loopfix doctor            (the bundled testbed, writes doctor/)
              loopfix doctor MODEL --quick --out doctor-quick
    """
    import torch

    from loopfix.atomic import check_output_path
    from loopfix.doctor import run_doctor

    temps = parse_temperatures(temperatures)
    given = {"n": n, "threads": threads, "max_new_tokens": max_new_tokens}
    optional = {name: value for name, value in given.items() if value is not None}
    at_least(1, batch_size=batch_size, min_loops=min_loops, **optional)
    check_output_path(out, folder=True)
    config = DoctorConfig(
        model=model,
        out=out,
        suite=suite,
        n=n,
        temperatures=temps,
        seed=seed,
        max_new_tokens=max_new_tokens,
        guards=None if guards is None else parse_list(guards),
        repair=repair,
        consistency=consistency,
        min_loops=min_loops,
        batch_size=batch_size,
        measure_backend=measure_backend,
        vllm_python=vllm_python,
        model_name=model_name,
        quick=quick,
    )
    if threads is not None:
        torch.set_num_threads(threads)
    with work_progress() as progress:
        result = run_doctor(
            config,
            report=lambda line: console.print(line, markup=False, soft_wrap=True),
            progress=progress,
        )
    advice = result.recommendation
    for line in (
        f"recommendation: T={advice.temperature:g}, guard {advice.guard}. {advice.reason}.",
        f"repair: {result.repair.verdict or 'skipped: ' + str(result.repair.skipped)}",
        f"wrote {out / 'summary.json'}, {out / 'report.md'} and {out / 'report.html'}",
    ):
        console.print(line, markup=False, soft_wrap=True)

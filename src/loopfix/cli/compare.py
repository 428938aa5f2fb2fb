"""`loopfix compare`: every decode-time guard on the same prompts and seeds, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from loopfix.cli.common import TRUST_REMOTE_CODE, console, examples, parse_floats

EXAMPLES = examples(
    "loopfix compare loopfix:stargraph --suite stargraph --n 100 --temperatures 0,0.6 "
    "--out runs/guards",
    "loopfix compare loopfix:stargraph --guards none,dry,rescue+dry --guard-arg dry.multiplier=0.8",
    "loopfix compare Qwen/Qwen3-0.6B --suite arith --guards none,penalty,rescue "
    "--guard-arg penalty.presence=1.5 --max-new-tokens 4096",
)
DEFAULT_GUARDS = "none,penalty,dry,ngram,entropy-temp,adaptive-temp,rescue"


def register(app: typer.Typer) -> None:
    app.command(
        "compare", help="Compare decode-time guards on the same prompts and seeds." + EXAMPLES
    )(compare_command)


def _table(summary: dict[str, Any]) -> Table:
    from loopfix.report.guard_comparison import COLUMNS, cell

    table = Table(title=f"guards on {summary['model']} / {summary['suite']}")
    for _, label in COLUMNS:
        table.add_column(label, justify="right")
    for entry in summary["entries"]:
        table.add_row(*(cell(key, entry[key]) for key, _ in COLUMNS))
    return table


def compare_command(
    model: str = typer.Argument(..., help="folder, hub id or loopfix:NAME"),
    suite: str = typer.Option("stargraph", help="stargraph, arith, or a JSON-lines file"),
    guards: str = typer.Option(DEFAULT_GUARDS, help="comma-separated guard specs (a+b composes)"),
    guard_arg: Annotated[
        list[str] | None,
        typer.Option("--guard-arg", help="GUARD.PARAMETER=VALUE (JSON or text), repeatable"),
    ] = None,
    temperatures: str = typer.Option("0,0.6", help="comma-separated sampler temperatures"),
    n: int | None = typer.Option(None, help="prompts (built-in suites: how many to generate)"),
    samples: int = typer.Option(1, help="samples per prompt, guard and temperature"),
    seed: int = typer.Option(0, help="seed of the suite and of every sample (shared by guards)"),
    max_new_tokens: int = typer.Option(256, help="cap; an output that reaches it is cut"),
    top_p: float = typer.Option(1.0, help="nucleus mass"),
    top_k: int = typer.Option(0, help="top-k (0 = off)"),
    batch_size: int = typer.Option(16, help="rows in flight (hf engine) or requests per vllm call"),
    device: str | None = typer.Option(None, help="cpu, cuda, ... (default: best available)"),
    backend: str = typer.Option(
        "hf", help="hf (our decode engine, real rollback) or vllm (run from .venv-vllm)"
    ),
    out: Annotated[Path, typer.Option(help="output directory (resumes when it matches)")] = Path(
        "compare"
    ),
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Compare decode-time guards on the same prompts and seeds."""
    from loopfix.guards import parse_guard_args
    from loopfix.scan import ScanConfig
    from loopfix.scan.guard_comparison import CompareConfig, run_compare

    values = parse_floats(temperatures, "--temperatures")
    scan = ScanConfig.model_validate(
        {
            "model": model,
            "suite": suite,
            "n": n,
            "temperatures": values,
            "samples": samples,
            "seed": seed,
            "max_new_tokens": max_new_tokens,
            "top_p": top_p,
            "top_k": top_k,
            "batch_size": batch_size,
            "device": device,
            "backend": backend,
            "out": out,
            "trust_remote_code": trust_remote_code,
        }
    )
    config = CompareConfig(
        scan=scan,
        guards=[g.strip() for g in guards.split(",") if g.strip()],
        guard_args=parse_guard_args(guard_arg or []),
    )
    summary = run_compare(config)
    console.print(_table(summary))
    console.print(
        f"wrote {out}/summary.json, {out}/report.html and one scan per guard in {out}/runs"
    )

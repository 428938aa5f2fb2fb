"""`loopfix consistency`: why the same prompt gives different outputs, check by check."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from loopfix.cli.common import console, examples, parse_ints, parse_list, parse_temperatures

EXAMPLES = examples(
    "loopfix consistency loopfix:stargraph --n 32 --out runs/consistency",
    "loopfix consistency loopfix:stargraph --checks determinism,batch_invariance --json c.json",
    "loopfix consistency ./my-model --suite arith --n 8 --checks backend --url http://127.0.0.1:8000",
)
_COLORS = {"pass": "green", "warn": "yellow", "fail": "red", "skipped": "dim"}


def register(app: typer.Typer) -> None:
    app.command(
        "consistency",
        help="Explain why the same prompt gives different outputs (seed, batch, precision, "
        "backend, context)." + EXAMPLES,
    )(consistency_command)


def consistency_command(
    model: str = typer.Argument(..., help="folder, hub id or loopfix:NAME"),
    suite: str | None = typer.Option(None, help="stargraph (default), arith, or a JSON-lines file"),
    n: int | None = typer.Option(None, help="prompts (built-in suites: how many to generate)"),
    checks: str | None = typer.Option(None, help="comma-separated checks (default: all)"),
    temperatures: str | None = typer.Option(
        None, help="comma-separated temperatures of seed_sensitivity and sampling_pool"
    ),
    seeds: int | None = typer.Option(None, help="sampling seeds compared by seed_sensitivity"),
    batch_sizes: str | None = typer.Option(
        None, help="comma-separated greedy batch sizes compared with batch 1"
    ),
    max_new_tokens: int | None = typer.Option(None, help="generation cap of every run"),
    seed: int | None = typer.Option(None, help="seed of the suite and the first sampling seed"),
    preamble_share: float | None = typer.Option(
        None, help="context: the preamble fills this share of the room a prompt leaves"
    ),
    template: bool | None = typer.Option(
        None,
        "--template/--no-template",
        help="render with the chat template (default: when the tokenizer has one)",
    ),
    compare_threads: bool | None = typer.Option(
        None,
        "--compare-threads/--no-compare-threads",
        help="determinism also compares greedy on another torch thread count (default: on)",
    ),
    url: str | None = typer.Option(None, help="OpenAI-compatible server for the backend check"),
    model_name: str | None = typer.Option(None, help="served model name at --url"),
    json_path: Annotated[
        Path | None, typer.Option("--json", help="also write consistency.json here")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="folder for consistency.json and report.html")
    ] = None,
) -> None:
    """Explain why the same prompt gives different outputs. Unset options take
    `ConsistencyConfig`'s defaults (docs/consistency.md)."""
    from loopfix.atomic import check_output_path
    from loopfix.consistency import ConsistencyConfig, run_consistency, write_consistency

    given = {
        "model": model,
        "suite": suite,
        "n": n,
        "checks": None if checks is None else parse_list(checks),
        "temperatures": None if temperatures is None else parse_temperatures(temperatures),
        "seeds": seeds,
        "batch_sizes": None if batch_sizes is None else parse_ints(batch_sizes, "--batch-sizes"),
        "max_new_tokens": max_new_tokens,
        "seed": seed,
        "preamble_share": preamble_share,
        "template": template,
        "compare_threads": compare_threads,
        "url": url,
        "model_name": model_name,
        "out": out,
    }
    options = {name: value for name, value in given.items() if value is not None}
    config = ConsistencyConfig.model_validate(options)  # errors: one line, by LoopfixGroup
    check_output_path(config.out, folder=True)
    if json_path is not None:
        check_output_path(json_path)
    table = Table(title=f"consistency of {model} on {config.suite}")
    for column in ("check", "status", "seconds", "summary"):
        table.add_column(column)
    result = run_consistency(
        config,
        on_check=lambda c: console.print(
            f"{c.name}: [{_COLORS[c.status]}]{c.status}[/] ({c.seconds:.1f} s)"
        ),
    )
    for check in result.checks:
        table.add_row(
            check.name,
            f"[{_COLORS[check.status]}]{check.status}[/]",
            f"{check.seconds:.1f}",
            check.summary,
        )
    console.print(table)
    paths = write_consistency(result, config.out, json_path)
    console.print("wrote " + ", ".join(str(p) for p in paths.values()))

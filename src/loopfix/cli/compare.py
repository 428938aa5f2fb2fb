"""`loopfix compare`: every decode-time guard on the same prompts and seeds, side by side."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from loopfix.cli.common import console, examples, narrow_table, work_progress
from loopfix.cli.options import build, option
from loopfix.scan.config import ScanConfig
from loopfix.scan.guard_config import CompareConfig

if TYPE_CHECKING:
    from loopfix.guard_summaries import CompareResult

EXAMPLES = examples(
    "loopfix compare loopfix:stargraph --suite stargraph --n 100 --temperatures 0,0.6 "
    "--out runs/guards",
    "loopfix compare loopfix:stargraph --guards none,dry,rescue+dry --guard-arg dry.multiplier=0.8",
    "loopfix compare Qwen/Qwen3-0.6B --suite arith --guards none,penalty,rescue "
    "--guard-arg penalty.presence=1.5 --max-new-tokens 4096",
)


def register(app: typer.Typer) -> None:
    app.command(
        "compare", help="Compare decode-time guards on the same prompts and seeds." + EXAMPLES
    )(compare_command)


def compare_table(result: CompareResult) -> Table:
    """The guards in rank order at each temperature (`answers_first`), answers first."""
    from loopfix.report.guard_comparison import TERMINAL_COLUMNS
    from loopfix.scan.guard_comparison import ranked

    entries = ranked(result.entries)
    rows = [[column.cell(entry) for column in TERMINAL_COLUMNS] for entry in entries]
    sizes = "/".join(str(n) for n in dict.fromkeys(entry.summary.n for entry in entries))
    return narrow_table(
        f"guards on {result.model} / {result.suite} (n={sizes}), by answers recovered vs none",
        [(column.short, column.header) for column in TERMINAL_COLUMNS],
        rows,
    )


def compare_command(
    model: str = typer.Argument(..., help="folder, hub id or loopfix:NAME"),
    suite: str = option(ScanConfig, "suite"),
    guards: str = option(CompareConfig, "guards"),
    guard_arg: Annotated[
        list[str] | None,
        typer.Option("--guard-arg", help="GUARD.PARAMETER=VALUE (JSON or text), repeatable"),
    ] = None,
    temperatures: str = option(ScanConfig, "temperatures"),
    n: int | None = option(ScanConfig, "n"),
    samples: int = option(ScanConfig, "samples"),
    seed: int = option(ScanConfig, "seed"),
    max_new_tokens: int | None = option(ScanConfig, "max_new_tokens"),
    top_p: float = option(ScanConfig, "top_p"),
    top_k: int = option(ScanConfig, "top_k"),
    batch_size: int = option(ScanConfig, "batch_size"),
    device: str | None = option(ScanConfig, "device"),
    backend: str = option(ScanConfig, "backend"),
    warning: str | None = option(ScanConfig, "warning"),
    # compare writes a directory of scans, not one scan: its own default, not ScanConfig's
    out: Path = typer.Option(Path("compare"), help="output directory (resumes when it matches)"),
    trust_remote_code: bool = option(ScanConfig, "trust_remote_code", "--trust-remote-code"),
) -> None:
    """Compare decode-time guards on the same prompts and seeds."""
    from loopfix.guards import parse_guard_args
    from loopfix.scan.guard_comparison import run_compare

    values = {name: value for name, value in locals().items() if name in ScanConfig.model_fields}
    scan = build(ScanConfig, {**values, "model": model})
    guard_args = parse_guard_args(guard_arg or [])
    config = build(CompareConfig, {"scan": scan, "guards": guards, "guard_args": guard_args})
    with work_progress() as progress:
        result = run_compare(config, progress)
    console.print(compare_table(result))
    console.print(result.ranking, markup=False)
    for note in result.notes:
        console.print(note, markup=False)
    console.print(
        f"wrote {out}/summary.json, {out}/report.html and one scan per guard in {out}/runs"
    )

"""`loopfix repair MODEL`: find a loop direction, patch a few columns, verify, write the patch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from loopfix.cli.common import TRUST_REMOTE_CODE, at_least, console
from loopfix.cli.options import build, option
from loopfix.repair.config import RepairConfig


def register(app: typer.Typer) -> None:
    app.command("repair")(repair_command)


def repair_command(
    model: Annotated[
        str, typer.Argument(help="loopfix:NAME or testbed folder; any model with --suite")
    ] = "loopfix:stargraph",
    out: Annotated[Path, typer.Option("--out", help="folder for patch, verify.json, report.md")] = (
        Path("repair")
    ),
    temperature: float = option(RepairConfig, "temperature"),
    prompts: int = option(RepairConfig, "prompts"),
    alphas: str = option(RepairConfig, "alphas"),
    ks: str = option(RepairConfig, "ks"),
    max_kl: float = option(RepairConfig, "max_kl"),
    search: str = option(RepairConfig, "search"),
    trials: int = option(RepairConfig, "trials"),
    positions: str = option(RepairConfig, "positions"),
    batch_size: int = option(RepairConfig, "batch_size"),
    threads: Annotated[int, typer.Option(help="torch CPU threads")] = 1,
    source: str | None = option(RepairConfig, "source"),
    suite: str | None = option(RepairConfig, "suite"),
    n: int | None = option(RepairConfig, "n"),
    records: Path | None = option(RepairConfig, "records"),
    max_new_tokens: int | None = option(RepairConfig, "max_new_tokens"),
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Repair a model's loops with a verified, reversible column edit (default: the testbed).

    Examples: loopfix repair loopfix:stargraph --out repair/stargraph;
    loopfix repair Qwen/Qwen3-0.6B --suite arith --n 200 --max-new-tokens 512 --batch-size 8;
    loopfix repair loopfix:smollm2 --source rescue --suite arith
    """
    import torch

    from loopfix.atomic import check_output_path
    from loopfix.repair import run_repair

    at_least(1, threads=threads)
    check_output_path(out, folder=True)  # before minutes of work, not after
    values = {name: value for name, value in locals().items() if name in RepairConfig.model_fields}
    # Verified at the primary temperature and at every default one.
    temperatures = sorted({*RepairConfig.model_fields["temperatures"].default, temperature})
    config = build(RepairConfig, {**values, "temperatures": temperatures})
    torch.set_num_threads(threads)
    result = run_repair(
        model,
        out,
        config,
        report=lambda line: console.print(line, markup=False),
        trust_remote_code=trust_remote_code,
    )
    console.print((out / "report.md").read_text(), markup=False, soft_wrap=True)
    console.print(f"wrote {out / 'verify.json'}, {out / 'report.md'} and {result.patch}")

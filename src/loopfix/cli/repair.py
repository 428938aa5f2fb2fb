"""`loopfix repair MODEL`: find a loop direction, patch a few columns, verify, write the patch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from loopfix.cli.common import TRUST_REMOTE_CODE, at_least, console, parse_floats, parse_ints


def register(app: typer.Typer) -> None:
    app.command("repair")(repair_command)


def repair_command(
    model: Annotated[
        str, typer.Argument(help="loopfix:NAME or testbed folder; any model with --suite")
    ] = "loopfix:stargraph",
    out: Annotated[Path, typer.Option("--out", help="folder for patch, verify.json, report.md")] = (
        Path("repair")
    ),
    temperature: Annotated[float, typer.Option(help="primary verification temperature")] = 0.6,
    prompts: Annotated[int, typer.Option(help="held-out verification prompts")] = 1000,
    alphas: Annotated[str, typer.Option(help="edit strengths searched")] = "1,2,4,6",
    ks: Annotated[str, typer.Option(help="columns per edited layer searched")] = "8,32",
    max_kl: Annotated[float, typer.Option(help="KL budget on normal walks")] = 0.1,
    search: Annotated[
        str, typer.Option(help="grid, or optuna (seeded multi-objective; needs the search extra)")
    ] = "grid",
    trials: Annotated[int, typer.Option(help="candidates scored by --search optuna")] = 40,
    positions: Annotated[str, typer.Option(help="probed states: decision or mode")] = "decision",
    batch_size: Annotated[int, typer.Option(help="sequences per probe/scoring pass")] = 256,
    threads: Annotated[int, typer.Option(help="torch CPU threads")] = 1,
    suite: Annotated[
        str | None,
        typer.Option(help="branches from scan records of this suite (required for non-testbeds)"),
    ] = None,
    n: Annotated[int | None, typer.Option(help="suite items of the repair's own scan")] = None,
    records: Annotated[
        Path | None,
        typer.Option(help="records.jsonl of `loopfix scan` (default: scan into OUT/scan)"),
    ] = None,
    max_new_tokens: Annotated[
        int, typer.Option(help="generation cap (testbed verification; the own scan)")
    ] = 48,
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Repair a model's loops with a verified, reversible column edit (default: the testbed).

    Examples: loopfix repair loopfix:stargraph --out repair/stargraph;
    loopfix repair Qwen/Qwen3-0.6B --suite arith --n 200 --max-new-tokens 512 --batch-size 8
    """
    import torch

    from loopfix.atomic import check_output_path
    from loopfix.repair import RepairConfig, run_repair

    at_least(1, threads=threads)
    check_output_path(out, folder=True)  # before minutes of work, not after
    config = RepairConfig(
        temperature=temperature,
        temperatures=tuple(sorted({0.0, 0.6, 1.0, temperature})),
        prompts=prompts,
        alphas=tuple(parse_floats(alphas, "--alphas")),
        ks=tuple(parse_ints(ks, "--ks")),
        max_kl=max_kl,
        search=search,  # type: ignore[arg-type]
        trials=trials,
        batch_size=batch_size,
        positions=positions,  # type: ignore[arg-type]
        suite=suite,
        n=n,
        records=records,
        max_new_tokens=max_new_tokens,
    )
    torch.set_num_threads(threads)
    result = run_repair(
        model,
        out,
        config,
        report=lambda line: console.print(line, markup=False),
        trust_remote_code=trust_remote_code,
    )
    console.print((out / "report.md").read_text(), markup=False, soft_wrap=True)
    console.print(f"wrote {out / 'verify.json'}, {out / 'report.md'} and {result['patch']}")

"""`loopfix repair MODEL`: find a loop direction, patch a few columns, verify, write the patch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from loopfix.cli.common import TRUST_REMOTE_CODE, at_least, console
from loopfix.cli.options import cli_default, field_help, option, option_values
from loopfix.repair.config import SUITE, PresetName, RepairConfig


def by_source(name: str) -> Any:
    """An option whose default is the preset's: left out, the config takes it from the preset
    the command picks (TESTBED, the field's own default; SUITE with --suite or --records), and
    the help says both."""
    field = RepairConfig.model_fields[name]
    text = SUITE[name]
    written = ",".join(f"{v:g}" for v in text) if isinstance(text, tuple) else text
    return typer.Option(
        None,
        help=f"{field_help(field)} (default: {cli_default(field)} on the testbed, {written} with "
        "--suite or --records)",
    )


def register(app: typer.Typer) -> None:
    app.command("repair")(repair_command)


def repair_command(
    model: Annotated[
        str, typer.Argument(help="loopfix:NAME or testbed folder; any model with --suite")
    ] = "loopfix:stargraph",
    out: Annotated[Path, typer.Option("--out", help="folder for patch, verify.json, report.md")] = (
        Path("repair")
    ),
    temperature: float | None = by_source("temperature"),
    prompts: int | None = by_source("prompts"),
    causal_prompts: int = option(RepairConfig, "causal_prompts"),
    alphas: str | None = by_source("alphas"),
    ks: str | None = by_source("ks"),
    max_kl: float = option(RepairConfig, "max_kl"),
    search: str | None = by_source("search"),
    neuron_counts: str = option(RepairConfig, "neuron_counts"),
    neuron_scales: str = option(RepairConfig, "neuron_scales"),
    positions: str = option(RepairConfig, "positions"),
    batch_size: int | None = by_source("batch_size"),
    threads: Annotated[int, typer.Option(help="torch CPU threads")] = 1,
    source: str | None = option(RepairConfig, "source"),
    suite: str | None = option(RepairConfig, "suite"),
    n: int | None = option(RepairConfig, "n"),
    records: Path | None = option(RepairConfig, "records"),
    gen_dtype: str | None = by_source("gen_dtype"),
    max_touched_fraction: float | None = by_source("max_touched_fraction"),
    max_new_tokens: int | None = option(RepairConfig, "max_new_tokens"),
    verify_screened_out: bool = option(RepairConfig, "verify_screened_out"),
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Repair a model's loops with a verified, reversible column edit (default: the testbed).

    Examples: loopfix repair loopfix:stargraph --out repair/stargraph;
    loopfix repair Qwen/Qwen3-0.6B --suite arith --n 200 --max-new-tokens 512 --batch-size 8;
    loopfix repair loopfix:smollm2 --source rescue --suite arith;
    loopfix repair loopfix:gemma3-270m --suite tasks --search neuron
    """
    import torch

    from loopfix.atomic import check_output_path
    from loopfix.repair import run_repair

    at_least(1, threads=threads)
    check_output_path(out, folder=True)  # before minutes of work, not after
    values = {name: value for name, value in locals().items() if name in RepairConfig.model_fields}
    preset: PresetName = "suite" if suite is not None or records is not None else "testbed"
    config = RepairConfig.preset(preset, **option_values(RepairConfig, values))
    torch.set_num_threads(threads)
    result = run_repair(
        model,
        out,
        config,
        report=lambda line: console.print(line, markup=False),
        trust_remote_code=trust_remote_code,
    )
    console.print((out / "report.md").read_text(), markup=False, soft_wrap=True)
    patch = "" if result.patch is None else f" and {result.patch}"
    console.print(f"wrote {out / 'verify.json'}, {out / 'report.md'}{patch}")

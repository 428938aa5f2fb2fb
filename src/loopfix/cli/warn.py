"""`loopfix warn`: the own-model early warning, fitted on a model's scan records and measured in
tokens before the text tiers (docs/states.md)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from loopfix.cli.common import OptionError, console, examples, parse_list
from loopfix.cli.options import build, option
from loopfix.leadtime.config import WarningConfig


def register(app: typer.Typer) -> None:
    app.command(
        "warn",
        help="Fit an early warning on a model's own scan records (hidden states, top-1 "
        "probability, entropy) and measure how many tokens before the text tiers it fires."
        + examples(
            "loopfix scan loopfix:stargraph --suite stargraph --n 600 --temperatures 0 "
            "--max-new-tokens 48 --out scan-tb",
            "loopfix warn scan-tb loopfix:stargraph --window 8 --out warn-tb",
        ),
    )(warn_command)


def warn_command(
    records: str = typer.Argument(..., help="a `loopfix scan` folder or its records.jsonl"),
    model: str = typer.Argument(..., help="the model that generated them"),
    extra: str | None = typer.Option(
        None, help="comma-separated further scans of the same model, suite and settings"
    ),
    layer: int | None = option(WarningConfig, "layer"),
    window: int = option(WarningConfig, "window"),
    features: str = option(WarningConfig, "features"),
    false_alarm: float = option(WarningConfig, "false_alarm"),
    strength: float = option(WarningConfig, "strength"),
    heldout_share: float = option(WarningConfig, "heldout_share"),
    out: Path = typer.Option(Path("warning"), "--out", help="folder for the probe and results"),
) -> None:
    from loopfix.leadtime.run import run_warning
    from loopfix.states.warning import MAX_WINDOW

    if window > MAX_WINDOW:
        raise OptionError(f"--window: at most {MAX_WINDOW} steps, got {window}")
    config = build(
        WarningConfig,
        {
            "records": records,
            "extra": parse_list(extra) if extra else [],
            "model": model,
            "layer": layer,
            "window": window,
            "features": features,
            "false_alarm": false_alarm,
            "strength": strength,
            "heldout_share": heldout_share,
        },
    )
    probe, parts = run_warning(config, out, lambda line: console.print(line, markup=False))
    reads = f"layer {probe.layer} and signals" if probe.states else "signals only"
    table = Table(title=f"early warning on {reads}, threshold {probe.threshold:.4f}")
    for header in (
        "part",
        "rule",
        "clean",
        "false alarms",
        "loops",
        "warned",
        "text fired",
        "earlier",
        "lead p10/p25/p50/p75/p90",
        "other (warned)",
    ):
        table.add_column(header)
    for part in parts:
        quantiles = "/".join(f"{v:g}" for v in part.lead_percentiles.values()) or "-"
        table.add_row(
            part.part,
            part.rule,
            str(part.clean),
            f"{part.false_alarms} ({100 * part.false_alarm_rate:.1f}%)" if part.clean else "0",
            str(part.loops),
            str(part.warned),
            str(part.text_fired),
            str(part.earlier),
            quantiles,
            f"{part.others} ({part.others_warned})",
        )
    console.print(table)
    console.print(f"wrote {out / 'warning_probe.json'}, {out / 'warning.json'}")

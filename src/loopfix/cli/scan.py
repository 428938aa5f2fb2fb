"""`loopfix scan`: measure a model's loops across decode settings, or compare two runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from loopfix.cli.common import OptionError, console, examples, narrow_table, work_progress
from loopfix.cli.options import build, option
from loopfix.scan.config import ScanConfig
from loopfix.summaries import Comparison, ScanSummary, Shift

DEFAULT_OUT = ScanConfig.model_fields["out"].default

EXAMPLES = examples(
    "loopfix scan loopfix:stargraph --n 200 --temperatures 0,0.6,1.0 --out runs/testbed",
    "loopfix scan Qwen/Qwen3-0.6B --suite arith --n 50 --samples 4 --think on "
    "--max-new-tokens 4096",
    "loopfix scan http://127.0.0.1:8000 --backend openai --model-name qwen --suite my.jsonl",
    "loopfix scan --compare runs/before runs/after",
)


def register(app: typer.Typer) -> None:
    app.command("scan", help="Measure how often a model loops, per decode setting." + EXAMPLES)(
        scan_command
    )


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


SUMMARY_COLUMNS = (
    ("T", "temperature"),
    ("n", "samples generated"),
    ("loop", "loop rate (cut at the cap while looping)"),
    ("paper", "paper-metric loop rate"),
    ("cut", "cut rate"),
    ("acc", "accuracy"),
    ("acc¬loop", "accuracy of non-looping samples"),
    ("len", "mean length"),
    ("p90", "90th-percentile length"),
    ("over", "over-long prompts"),
)


def summary_table(summary: ScanSummary, title: str) -> Table:
    rows = [
        [
            f"{row.temperature:g}",
            str(row.n),
            _percent(row.loop_rate.value),
            _percent(row.paper_loop_rate.value),
            _percent(row.cut_rate.value),
            _percent(row.accuracy.value),
            _percent(row.accuracy_non_looping.value),
            "–" if row.mean_length is None else f"{row.mean_length:.1f}",
            "–" if row.p90_length is None else f"{row.p90_length:.0f}",
            str(row.overlong),
        ]
        for row in summary.settings
    ]
    return narrow_table(title, SUMMARY_COLUMNS, rows)


COMPARE_COLUMNS = (
    ("T", "temperature"),
    ("pairs", "pairs"),
    ("+", "rescues (wrong in A, right in B)"),
    ("-", "regressions (right in A, wrong in B)"),
    ("p", "exact McNemar p"),
    ("loop A→B", "loop A→B"),
    ("cut A→B", "cut A→B"),
    ("acc A→B", "accuracy A→B"),
)


def compare_table(result: Comparison, run_a: Path, run_b: Path) -> Table:
    def arrow(shift: Shift) -> str:
        return f"{_percent(shift.a)}→{_percent(shift.b)}"

    blocks = [(t.temperature, t.paired) for t in result.by_temperature]
    rows = [
        [
            label if isinstance(label, str) else ("–" if label is None else f"{label:g}"),
            str(block.pairs),
            str(block.rescues),
            str(block.regressions),
            f"{block.mcnemar_p:.3g}",
            arrow(block.loop_rate),
            arrow(block.cut_rate),
            arrow(block.accuracy),
        ]
        for label, block in [*blocks, ("all", result.overall)]
    ]
    title = f"A = {run_a}  vs  B = {run_b} (paired on {result.paired_on})"
    return narrow_table(title, COMPARE_COLUMNS, rows)


def _run_compare(runs: list[Path], out: Path | None) -> None:
    from loopfix.atomic import check_output_path, write_json_atomic
    from loopfix.scan import compare_runs

    if out is not None:
        check_output_path(out, *runs, folder=True)
    result = compare_runs(runs[0], runs[1])  # reads only: never repairs a run it compares
    console.print(compare_table(result, runs[0], runs[1]))
    if out is not None:
        write_json_atomic(
            out / "compare.json", {"a": str(runs[0]), "b": str(runs[1]), **result.to_json()}
        )
        console.print(f"wrote {out / 'compare.json'}")


def _run(config: ScanConfig) -> None:
    from loopfix.scan import run_scan

    try:
        with work_progress() as progress:
            result = run_scan(config, on_progress=progress("scanning"))
    except KeyboardInterrupt:
        console.print(f"interrupted: the records in {config.out} are intact; rerun to resume")
        raise typer.Exit(130) from None
    console.print(summary_table(result.summary, f"{config.model} on {config.suite}"))
    for setting in result.summary.settings:
        if setting.thinking is not None:
            console.print(f"T={setting.temperature:g}: {setting.thinking.line()}", markup=False)
    for note in result.summary.notes:
        console.print(note, markup=False)
    for warning in result.summary.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    console.print(
        f"{result.generated} new samples; wrote {config.out}/records.jsonl, "
        "summary.json, report.html"
    )


def scan_command(
    model: str | None = typer.Argument(None, help="folder, hub id, loopfix:NAME, or base URL"),
    suite: str = option(ScanConfig, "suite"),
    n: int | None = option(ScanConfig, "n"),
    temperatures: str = option(ScanConfig, "temperatures"),
    samples: int = option(ScanConfig, "samples"),
    seed: int = option(ScanConfig, "seed"),
    max_new_tokens: int | None = option(ScanConfig, "max_new_tokens"),
    top_p: float = option(ScanConfig, "top_p"),
    top_k: int = option(ScanConfig, "top_k"),
    min_p: float = option(ScanConfig, "min_p"),
    presence_penalty: float = option(ScanConfig, "presence_penalty"),
    frequency_penalty: float = option(ScanConfig, "frequency_penalty"),
    repetition_penalty: float = option(ScanConfig, "repetition_penalty"),
    think: str | None = typer.Option(None, help="on|off: enable_thinking in the chat template"),
    backend: str = option(ScanConfig, "backend"),
    model_name: str | None = option(ScanConfig, "model_name"),
    api: str = option(ScanConfig, "api"),
    ray_address: str | None = option(ScanConfig, "ray_address"),
    batch_size: int = option(ScanConfig, "batch_size"),
    concurrency: int = option(ScanConfig, "concurrency"),
    capture: bool = option(ScanConfig, "capture"),
    warning: str | None = option(ScanConfig, "warning"),
    device: str | None = option(ScanConfig, "device"),
    trust_remote_code: bool = option(ScanConfig, "trust_remote_code", "--trust-remote-code"),
    out: Path = option(ScanConfig, "out"),
    compare: Annotated[
        list[Path] | None,
        typer.Option("--compare", help="compare two run directories: --compare RUN_A RUN_B"),
    ] = None,
) -> None:
    """Measure how often a model loops, per decode setting."""
    if compare:
        runs = list(compare) + ([Path(model)] if model else [])
        if len(runs) != 2:
            raise OptionError("--compare takes two run directories: --compare RUN_A RUN_B")
        _run_compare(runs, out if out != DEFAULT_OUT else None)
        return
    if model is None:
        raise OptionError("MODEL is required (or use --compare RUN_A RUN_B)")
    if think not in (None, "on", "off"):
        raise OptionError(f"--think: use on or off, got {think!r}")
    values = {name: value for name, value in locals().items() if name in ScanConfig.model_fields}
    _run(build(ScanConfig, {**values, "think": None if think is None else think == "on"}))

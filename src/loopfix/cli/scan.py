"""`loopfix scan`: measure a model's loops across decode settings, or compare two runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from loopfix.cli.common import (
    TRUST_REMOTE_CODE,
    OptionError,
    console,
    examples,
    parse_floats,
    progress_bar,
)

DEFAULT_OUT = Path("scan")

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


def summary_table(summary: dict[str, Any], title: str) -> Table:
    table = Table(title=title)
    columns = (
        "T",
        "n",
        "loop",
        "paper loop",
        "cut",
        "accuracy",
        "acc. non-loop",
        "mean len",
        "p90 len",
        "over-long",
    )
    for column in columns:
        table.add_column(column, justify="right")
    for row in summary["settings"]:
        table.add_row(
            f"{row['temperature']:g}",
            str(row["n"]),
            _percent(row["loop_rate"]),
            _percent(row["paper_loop_rate"]),
            _percent(row["cut_rate"]),
            _percent(row["accuracy"]),
            _percent(row["accuracy_non_looping"]),
            "–" if row["mean_length"] is None else f"{row['mean_length']:.1f}",
            "–" if row["p90_length"] is None else f"{row['p90_length']:.0f}",
            str(row["overlong"]),
        )
    return table


def compare_table(result: dict[str, Any]) -> Table:
    table = Table(
        title=f"A = {result['a']}  vs  B = {result['b']} (paired on {result['paired_on']})"
    )
    for column in (
        "T",
        "pairs",
        "rescues",
        "regressions",
        "McNemar p",
        "loop A→B",
        "cut A→B",
        "accuracy A→B",
    ):
        table.add_column(column, justify="right")
    for block in [*result["by_temperature"], {"temperature": "all", **result["overall"]}]:

        def arrow(name: str, block: dict[str, Any] = block) -> str:
            rates = block[name]
            return f"{_percent(rates['a'])} → {_percent(rates['b'])}"

        t = block["temperature"]
        table.add_row(
            t if isinstance(t, str) else ("–" if t is None else f"{t:g}"),
            str(block["pairs"]),
            str(block["rescues"]),
            str(block["regressions"]),
            f"{block['mcnemar_p']:.3g}",
            arrow("loop_rate"),
            arrow("cut_rate"),
            arrow("accuracy"),
        )
    return table


def _run_compare(runs: list[Path], out: Path | None) -> None:
    from loopfix.atomic import check_output_path, write_json_atomic
    from loopfix.scan import compare_runs

    if out is not None:
        check_output_path(out, folder=True)
    result = compare_runs(runs[0], runs[1])  # reads only: never repairs a run it compares
    console.print(compare_table(result))
    if out is not None:
        write_json_atomic(out / "compare.json", result)
        console.print(f"wrote {out / 'compare.json'}")


def _run(config: Any) -> None:
    from loopfix.scan import run_scan

    try:
        with progress_bar() as progress:
            task = progress.add_task("scanning", total=None)

            def on_progress(advance: int, total: int | None) -> None:
                if total is not None:
                    progress.update(task, total=total)
                progress.advance(task, advance)

            result = run_scan(config, on_progress=on_progress)
    except KeyboardInterrupt:
        console.print(f"interrupted: the records in {config.out} are intact; rerun to resume")
        raise typer.Exit(130) from None
    console.print(summary_table(result.summary, f"{config.model} on {config.suite}"))
    for warning in result.summary["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    console.print(
        f"{result.generated} new samples; wrote {config.out}/records.jsonl, "
        "summary.json, report.html"
    )


def scan_command(
    model: str | None = typer.Argument(None, help="folder, hub id, loopfix:NAME, or base URL"),
    suite: str = typer.Option("stargraph", help="stargraph, arith, or a JSON-lines file"),
    n: int | None = typer.Option(None, help="prompts (built-in suites: how many to generate)"),
    temperatures: str = typer.Option("0,0.6,1.0", help="comma-separated temperatures"),
    samples: int = typer.Option(1, help="samples per prompt and temperature"),
    seed: int = typer.Option(0, help="seed of built-in suites and of every sample"),
    max_new_tokens: int = typer.Option(256, help="cap; an output that reaches it is cut"),
    top_p: float = typer.Option(1.0, help="nucleus mass"),
    top_k: int = typer.Option(0, help="top-k (0 = off)"),
    min_p: float = typer.Option(0.0, help="min-p (0 = off)"),
    presence_penalty: float = typer.Option(0.0, help="OpenAI presence penalty"),
    frequency_penalty: float = typer.Option(0.0, help="OpenAI frequency penalty"),
    repetition_penalty: float = typer.Option(1.0, help="HF repetition penalty (1 = off)"),
    think: str | None = typer.Option(None, help="on|off: enable_thinking in the chat template"),
    backend: str = typer.Option("hf", help="hf, vllm or openai"),
    model_name: str | None = typer.Option(None, help="served model name (openai)"),
    api: str = typer.Option("chat", help="openai endpoint: chat or completions"),
    ray_address: str | None = typer.Option(None, help="Ray cluster address, or 'local'"),
    batch_size: int = typer.Option(16, help="prompts per batch"),
    concurrency: int = typer.Option(8, help="requests in flight (openai)"),
    capture: bool = typer.Option(False, help="record per-step top-1 probability and entropy"),
    trust_remote_code: bool = TRUST_REMOTE_CODE,
    out: Annotated[
        Path, typer.Option(help="run directory (resumes when it matches)")
    ] = DEFAULT_OUT,
    compare: Annotated[
        list[Path] | None,
        typer.Option("--compare", help="compare two run directories: --compare RUN_A RUN_B"),
    ] = None,
) -> None:
    """Measure how often a model loops, per decode setting."""
    from loopfix.scan import ScanConfig

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
    config = ScanConfig.model_validate(
        {
            "model": model,
            "suite": suite,
            "n": n,
            "temperatures": parse_floats(temperatures, "--temperatures"),
            "samples": samples,
            "seed": seed,
            "max_new_tokens": max_new_tokens,
            "top_p": top_p,
            "top_k": top_k,
            "min_p": min_p,
            "presence_penalty": presence_penalty,
            "frequency_penalty": frequency_penalty,
            "repetition_penalty": repetition_penalty,
            "think": None if think is None else think == "on",
            "backend": backend,
            "model_name": model_name,
            "api": api,
            "ray_address": ray_address,
            "batch_size": batch_size,
            "concurrency": concurrency,
            "capture": capture,
            "trust_remote_code": trust_remote_code,
            "out": out,
        }
    )
    _run(config)

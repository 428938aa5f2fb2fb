"""`loopfix doctor`: the closed loop on one model (measure, then repair, then report)."""

from __future__ import annotations

from pathlib import Path

import typer

from loopfix.cli.common import at_least, console, parse_temperatures, progress_bar
from loopfix.cli.lab import evaluation_table


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor_command)


def doctor_command(
    model: str = typer.Argument("loopfix:stargraph", help="testbed folder or loopfix:NAME"),
    n: int = typer.Option(
        300, help="fresh prompts per temperature; also the repair's verification prompts"
    ),
    seed: int = typer.Option(12345, help="prompt and sampler seed"),
    temperatures: str = typer.Option("0,1.0", help="comma-separated temperatures"),
    out: Path = typer.Option(
        Path("doctor"), "--out", help="folder for summary.json, report.md and repair/"
    ),
    threads: int = typer.Option(1, help="torch CPU threads (a tiny model gains nothing from more)"),
    repair: bool = typer.Option(True, help="run the repair stage (most of the doctor's time)"),
) -> None:
    """Measure how often a model loops, repair it, and write a report (default: the testbed).

    Example: loopfix doctor            (runs on loopfix:stargraph, writes doctor/)
    """
    import torch

    from loopfix.atomic import check_output_path
    from loopfix.doctor import NotATestbedError, run_doctor

    temps = parse_temperatures(temperatures)
    at_least(1, n=n, threads=threads)
    check_output_path(out, folder=True)
    torch.set_num_threads(threads)
    try:
        with progress_bar() as progress:
            task = progress.add_task("generating", total=n * len(temps))
            result = run_doctor(
                model,
                out,
                n=n,
                seed=seed,
                temperatures=temps,
                on_batch=lambda done: progress.advance(task, done),
                report=lambda line: console.print(line, markup=False),
                repair=repair,
            )
    except NotATestbedError as error:
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from error
    console.print(evaluation_table(result.evaluation, f"loopfix doctor: {model}"))
    console.print(
        "flywheel P(repeat again) after 1..6 repeats: "
        + " ".join(f"{p:.2f}" for p in result.evaluation.flywheel)
    )
    repaired = result.repair
    if repaired is None:
        console.print(f"repair skipped; wrote {out / 'summary.json'} and {out / 'report.md'}")
        return
    console.print(
        f"repair ({repaired['seconds']:.0f} s): {repaired['verdict']}; at "
        f"T={repaired['temperature']:g} loops {repaired['base_loop_rate']:.1%} -> "
        f"{repaired['patched_loop_rate']:.1%} (random control "
        f"{repaired['random_control_loop_rate']:.1%}), KL {repaired['kl']:.3f}, "
        f"touched {repaired['touched_fraction']:.2%}",
        markup=False,
    )
    console.print(f"wrote {out / 'summary.json'}, {out / 'report.md'} and {repaired['folder']}/")

"""`loopfix lab train|eval|experiment`: rebuild and measure the bundled star-graph testbed, and
run the training experiments on it."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from loopfix.atomic import write_text_atomic
from loopfix.cli.common import (
    TRUST_REMOTE_CODE,
    OptionError,
    at_least,
    console,
    examples,
    parse_temperatures,
    progress_bar,
)
from loopfix.cli.options import build, option
from loopfix.experiments.config import ExperimentConfig
from loopfix.lab.config import LabEvalConfig, TrainConfig
from loopfix.lab.think_config import ThinkTrainConfig

lab_app = typer.Typer(
    help="The bundled star-graph testbed: train it, evaluate it, run training experiments.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(lab_app, name="lab", help="Train or evaluate the star-graph testbed model.")


def evaluation_table(evaluation: object, title: str) -> Table:
    from loopfix.scan.testbed import LabEvaluation

    assert isinstance(evaluation, LabEvaluation)
    table = Table(title=title)
    for column in ("T", "n", "success", "loops", "paper", "cut", "legal", "mean len"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("failures: where they went")
    for row in evaluation.settings:
        failures = ", ".join(
            f"{k.replace('_', ' ')} {v}" for k, v in row.outcomes.items() if k != "success" and v
        )
        table.add_row(
            f"{row.temperature:g}",
            str(row.n),
            f"{row.success:.1%}",
            f"{row.loop_rate:.1%}",
            f"{row.paper_loop_rate:.1%}",
            f"{row.cut_rate:.1%}",
            f"{row.legal_rate:.1%}",
            f"{row.mean_length:.1f}",
            failures,
        )
    return table


@lab_app.command("train")
def train_command(
    out: Path = typer.Option(..., "--out", help="folder to write the HF model into"),
    variant: str = typer.Option(
        "stargraph",
        help="stargraph (2% looping teacher), stargraph-clean, or smollm2-think (the thinking "
        "model's LoRA delta on loopfix:smollm2; --out gets delta.safetensors + provenance.json)",
    ),
    seed: int = option(TrainConfig, "seed"),
    steps: int | None = typer.Option(None, help="optimizer steps (default: the variant's)"),
    threads: int = option(TrainConfig, "threads"),
    circle_share: float = option(ThinkTrainConfig, "circle_share"),
) -> None:
    """Train a testbed from scratch (deterministic for a seed; ~13 min on 2 cores), or the
    thinking model's delta (--variant smollm2-think; resumable in OUT).

    Examples: loopfix lab train --variant stargraph --out runs/testbed --seed 0
    loopfix lab train --variant smollm2-think --circle-share 0.25 --out runs/think
    """
    from loopfix.lab.config import VARIANTS
    from loopfix.lab.train import train

    if variant == "smollm2-think":
        _train_think(out, seed, steps, threads, circle_share)
        return
    if variant not in VARIANTS:
        raise OptionError(
            f"--variant: unknown variant {variant!r}; choose from {', '.join(VARIANTS)}"
        )
    update: dict[str, object] = {"seed": seed, "threads": threads}
    if steps is not None:
        update["steps"] = steps
    # model_validate, not model_copy: the options go through the fields' checks.
    config = TrainConfig.model_validate({**VARIANTS[variant].model_dump(), **update})
    with progress_bar() as progress:
        task = progress.add_task(f"training {variant}", total=config.steps)

        def on_step(step: int, loss: float) -> None:
            progress.update(
                task, completed=step + 1, description=f"training {variant} loss {loss:.3f}"
            )

        metadata = train(config, out, on_step)
    console.print(
        f"saved {out} ({metadata['parameters']:,} parameters, {metadata['train_seconds']} s, "
        f"final loss {metadata['final_loss']:.4f})"
    )


def _train_think(
    out: Path, seed: int, steps: int | None, threads: int, circle_share: float
) -> None:
    """`--variant smollm2-think`: distil the thinking teacher into SmolLM2 (lab.think_train)."""
    from loopfix.lab.think_train import train_think
    from loopfix.models.loading import resolve_model_path

    update: dict[str, object] = {"seed": seed, "threads": threads, "circle_share": circle_share}
    if steps is not None:
        update["steps"] = steps
    config = ThinkTrainConfig.model_validate(update)
    base = Path(resolve_model_path(config.base))
    with progress_bar() as progress:
        task = progress.add_task("training smollm2-think", total=config.steps)

        def on_step(step: int, loss: float) -> None:
            progress.update(
                task, completed=step + 1, description=f"training smollm2-think loss {loss:.3f}"
            )

        provenance = train_think(config, base, out, on_step)
    console.print(
        f"saved {out / 'delta.safetensors'} ({provenance['trainable_parameters']:,} trained "
        f"parameters, {provenance['cpu_seconds']} CPU s, final loss {provenance['final_loss']:.4f})"
    )


@lab_app.command("eval")
def eval_command(
    model: str = typer.Argument("loopfix:stargraph", help="testbed folder or loopfix:NAME"),
    n: int = option(LabEvalConfig, "n"),
    seed: int = option(LabEvalConfig, "seed"),
    temperatures: str = option(LabEvalConfig, "temperatures"),
    max_new_tokens: int = option(LabEvalConfig, "max_new_tokens"),
    batch_size: int = option(LabEvalConfig, "batch_size"),
    json_out: Path | None = typer.Option(None, "--json", help="write the results as JSON here"),
    out: Path | None = typer.Option(
        None, "--out", help="keep the scan here (records, summary, report.html; resumable)"
    ),
    threads: int = typer.Option(1, help="torch CPU threads (a tiny model gains nothing from more)"),
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Success, loop rate, legal-move rate and length per temperature, plus the flywheel.

    Example: loopfix lab eval loopfix:stargraph --n 1000 --temperatures 0,0.6,1.0 --json eval.json
    """
    import torch

    from loopfix.atomic import check_output_path
    from loopfix.lab.tokenizer import is_testbed_tokenizer
    from loopfix.models import load_model
    from loopfix.scan.testbed import evaluate_testbed

    settings = build(
        LabEvalConfig,
        {
            "n": n,
            "seed": seed,
            "temperatures": parse_temperatures(temperatures),
            "max_new_tokens": max_new_tokens,
            "batch_size": batch_size,
        },
    )
    at_least(1, threads=threads)
    if json_out is not None:
        check_output_path(json_out)
    if out is not None:
        check_output_path(out, folder=True)
    torch.set_num_threads(threads)
    loaded, tokenizer = load_model(model, trust_remote_code=trust_remote_code)
    if not is_testbed_tokenizer(tokenizer):
        raise OptionError(
            f"{model} is not a star-graph testbed (its vocabulary is not the testbed's), so "
            "testbed metrics would mean nothing; use `loopfix scan` for other models"
        )
    with progress_bar() as progress:
        task = progress.add_task("generating", total=n * len(settings.temperatures))
        evaluation = evaluate_testbed(
            loaded,
            tokenizer,
            settings,
            on_batch=lambda done: progress.advance(task, done),
            out=out,
        )
    console.print(evaluation_table(evaluation, f"{model}: {n} fresh graphs, cap {max_new_tokens}"))
    console.print(
        "flywheel P(repeat again) after 1..6 repeats: "
        + " ".join(f"{p:.2f}" for p in evaluation.flywheel)
    )
    if json_out is not None:
        evaluation.write_json(json_out)
        console.print(f"wrote {json_out}")


@lab_app.command(
    "experiment",
    help="Train a baseline and its variants for several seeds and compare their loops."
    + examples(
        "loopfix lab experiment --list",
        "loopfix lab experiment loop-data --seeds 3 --out runs/loop-data",
        "loopfix lab experiment all --jobs 2 --out runs/all",
    ),
)
def experiment_command(
    name: str | None = typer.Argument(
        None, help="the experiment (see --list), or all: every one, each distinct model once"
    ),
    list_names: bool = typer.Option(False, "--list", help="list the experiments and their claims"),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="results folder (resumable; default runs/experiment-NAME); for all, a folder per "
        "experiment in it and table.md with every table",
    ),
    seeds: int = option(ExperimentConfig, "seeds"),
    steps: int = option(ExperimentConfig, "steps"),
    n: int = option(ExperimentConfig, "n"),
    temperatures: str = option(ExperimentConfig, "temperatures"),
    graph: str = option(ExperimentConfig, "graph"),
    threads: int = option(ExperimentConfig, "threads"),
    jobs: int = typer.Option(
        1,
        "--jobs",
        min=1,
        help="(arm, seed) models trained at once, each in its own process (one per core: "
        "2 on a 2-core machine); not part of the plan, so a run may resume with another",
    ),
) -> None:
    from loopfix.experiments import (
        ALL,
        EXPERIMENTS,
        every_experiment,
        experiment_named,
        run_experiments,
        training_seconds,
    )

    if list_names:
        for experiment in EXPERIMENTS.values():
            console.print(f"{experiment.name}: {experiment.claim}", markup=False, soft_wrap=True)
        return
    if name is None:
        raise OptionError(f"NAME: give an experiment, one of {', '.join(EXPERIMENTS)}, or {ALL}")
    if name != ALL:
        experiment_named(name)  # an unknown name fails here, before anything is written
    config = build(
        ExperimentConfig,
        {
            "name": name,
            "seeds": seeds,
            "steps": steps,
            "n": n,
            "temperatures": parse_temperatures(temperatures),
            "graph": graph,
            "threads": threads,
        },
    )
    folder = out if out is not None else Path("runs") / f"experiment-{name}"
    runs = every_experiment(config) if name == ALL else {name: config}
    placed = [(run, folder / key if name == ALL else folder) for key, run in runs.items()]

    def report(line: str) -> None:
        console.print(line, markup=False, soft_wrap=True)

    summaries = run_experiments(placed, report, jobs)
    tables = [(out_folder / "table.md").read_text() for _, out_folder in placed]
    if name == ALL:
        models, seconds = training_seconds(placed)
        compute = (
            f"Training: {models} distinct models, {seconds:,.0f} s of training summed over "
            f"them (about {seconds / jobs / 3600:.2f} h of wall time at --jobs {jobs}; "
            "evaluation not counted).\n"
        )
        write_text_atomic(folder / "table.md", "\n".join([compute, *tables]))
        console.print(compute, markup=False)
        console.print(f"wrote {folder / 'table.md'} ({len(summaries)} experiments)")
    else:
        console.print(tables[0], markup=False)

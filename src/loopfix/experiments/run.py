"""Run experiments: train every (arm, seed), evaluate each with the testbed's one evaluation,
then summarise over seeds (`summary.py`).

An experiment's OUT holds `plan.json` (its settings and every arm's training config: what makes
a result), `runs/ARM/seed-S/model` (the trained testbed) and `runs/ARM/seed-S/result.json` (its
training record and evaluation), then `experiment.json`, `table.md` and `plot.svg`. A rerun
skips every (arm, seed) whose result is there and refuses an OUT that holds another plan.
Seeds run in the outer loop, so an interrupted run has whole seeds of paired arms first.

Several experiments run as one (`run_experiments`, behind `lab experiment all`) train each
distinct model once: arms of different experiments with the same training config, seed and
evaluation (every experiment's baseline is the same recipe) are trained and evaluated once and
the finished run folder is copied into the others. They run one experiment after another, and
each writes its summary files once its last run is there.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from loopfix.atomic import write_json_atomic, write_text_atomic
from loopfix.errors import field_problem
from loopfix.experiments.base import ExperimentError, base_recipe
from loopfix.experiments.config import ExperimentConfig
from loopfix.experiments.registry import experiment_named
from loopfix.experiments.summary import (
    ExperimentSummary,
    RunNumbers,
    plot_svg,
    summarise,
    table_markdown,
)
from loopfix.lab.config import TrainConfig
from loopfix.progress import line_progress

__all__ = ["Plan", "run_experiment", "run_experiments", "training_seconds"]

Report = Callable[[str], None]
Record = TypeVar("Record", bound=BaseModel)
LOSS_LINE_STEPS = 100  # a training progress line every this many steps


class Plan(BaseModel):
    """plan.json: the experiment's settings, its claim and every arm's training config (the
    baseline first). Read back, each config is completed by today's defaults, so a run planned
    before a `TrainConfig` field existed still resumes (the field held its default)."""

    model_config = ConfigDict(frozen=True)

    experiment: ExperimentConfig
    claim: str
    arms: dict[str, TrainConfig]


def plan_of(config: ExperimentConfig) -> Plan:
    experiment = experiment_named(config.name)
    arms, depth = config.graph
    recipe = base_recipe(config.steps, config.threads, (arms, depth))
    return Plan(experiment=config, claim=experiment.claim, arms=experiment.arms(recipe))


def _read(path: Path, model: type[Record], remedy: str) -> Record:
    """A file OUT holds, read as `model`; anything else is one line naming the file and field."""
    try:
        return model.model_validate_json(path.read_bytes())
    except ValidationError as error:
        raise ExperimentError(f"{field_problem(str(path), error, 'it')}; {remedy}") from None


def claim_out(out: Path, plan: Plan) -> None:
    """Write the plan into OUT, or check that the one already there is the same."""
    path = out / "plan.json"
    if path.is_file():
        if _read(path, Plan, "not an experiment plan: use a new --out") != plan:
            raise ExperimentError(
                f"--out: {out} holds another experiment plan (plan.json differs); "
                "use a new --out or the same settings"
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, plan.model_dump())


def run_folder(out: Path, arm: str, seed: int) -> Path:
    return out / "runs" / re.sub(r"[^A-Za-z0-9.-]+", "_", arm) / f"seed-{seed}"


def train_and_evaluate(
    train_config: TrainConfig,
    config: ExperimentConfig,
    folder: Path,
    report: Report,
    label: str,
) -> dict[str, object]:
    """Train (unless the model is there), evaluate, and return the run's record (result.json:
    the training record and the evaluation, each as its writer wrote it)."""
    import torch

    from loopfix.lab.train import train
    from loopfix.models import load_model
    from loopfix.scan.testbed import evaluate_testbed

    model_folder = folder / "model"
    training_file = model_folder / "training.json"
    if training_file.is_file():
        training = json.loads(training_file.read_text())
    else:

        def on_step(step: int, loss: float) -> None:
            if (step + 1) % LOSS_LINE_STEPS == 0 or step + 1 == train_config.steps:
                report(f"  {label}: step {step + 1}/{train_config.steps}, loss {loss:.3f}")

        training = train(train_config, model_folder, on_step)
    torch.set_num_threads(config.threads)
    model, tokenizer = load_model(str(model_folder), device="cpu")
    progress = line_progress(f"{label} evaluation", report)
    total = config.n * len(config.temperatures)
    evaluation = evaluate_testbed(
        model, tokenizer, config.evaluation(), on_batch=lambda done: progress(done, total)
    )
    return {"training": training, "evaluation": evaluation.to_dict()}


def _print_line(line: str) -> None:
    print(line, flush=True)


def _train_and_store(
    train_config: TrainConfig, config: ExperimentConfig, folder: Path, label: str
) -> None:
    """One job in a worker process: its lines go to the worker's stdout."""
    record = train_and_evaluate(train_config, config, folder, _print_line, label)
    write_json_atomic(folder / "result.json", record)


def run_experiment(
    config: ExperimentConfig, out: Path, report: Report = print, jobs: int = 1
) -> ExperimentSummary:
    """Train and evaluate every (arm, seed) not yet in OUT, `jobs` at a time (each in its own
    process when more than one), then write the summary files."""
    return run_experiments([(config, out)], report, jobs)[0]


def run_key(train_config: TrainConfig, config: ExperimentConfig) -> str:
    """What makes a run's result: its training config (seed included) and its evaluation."""
    return train_config.model_dump_json() + config.evaluation().model_dump_json()


# (settings, OUT, arm, seed, the arm's training config with that seed)
Slot = tuple[ExperimentConfig, Path, str, int, TrainConfig]


def _slots(plans: Sequence[tuple[ExperimentConfig, Path, Plan]]) -> list[Slot]:
    """Every (arm, seed) of the plans, seeds in the outer loop of each experiment."""
    return [
        (config, out, arm, seed, train_config.model_copy(update={"seed": seed}))
        for config, out, plan in plans
        for seed in range(config.seeds)
        for arm, train_config in plan.arms.items()
    ]


def run_experiments(
    runs: Sequence[tuple[ExperimentConfig, Path]], report: Report = print, jobs: int = 1
) -> list[ExperimentSummary]:
    """`run_experiment` for each (config, OUT), training every distinct model once. The
    experiments run one after the other (each seed-major) and each writes its summary files as
    soon as its last run is there, so a run stopped part way leaves whole experiments."""
    plans = [(config, out, plan_of(config)) for config, out in runs]
    for _, out, plan in plans:
        claim_out(out, plan)
    slots = _slots(plans)
    finished = {
        run_key(train_config, config): run_folder(out, arm, seed)
        for config, out, arm, seed, train_config in slots
        if (run_folder(out, arm, seed) / "result.json").is_file()
    }
    todo: dict[str, tuple[TrainConfig, ExperimentConfig, Path, str]] = {}
    copies: dict[str, list[Path]] = {}
    for number, (config, out, arm, seed, train_config) in enumerate(slots, 1):
        graph = "G({},{})".format(*config.graph)
        label = f"[{number}/{len(slots)}] {config.name} {graph} / {arm} seed {seed}"
        folder = run_folder(out, arm, seed)
        key = run_key(train_config, config)
        if (folder / "result.json").is_file():
            report(f"{label}: done before, kept")
        elif key in finished or key in todo:
            copies.setdefault(key, []).append(folder)
            report(f"{label}: the same model as another arm's, copied from it")
        else:
            todo[key] = (train_config, config, folder, label)
            report(f"{label}: training {train_config.steps} steps, then evaluating")
    summaries: dict[int, ExperimentSummary] = {}

    def settle(key: str | None) -> None:
        """`key`'s run is finished (None: nothing new): copy it where it is wanted, then
        summarise every experiment that now has all its runs."""
        if key is not None:
            source = finished.get(key) or todo[key][2]
            for folder in copies.pop(key, []):
                shutil.copytree(source / "model", folder / "model", dirs_exist_ok=True)
                shutil.copyfile(source / "result.json", folder / "result.json")  # last: done
        for index, (config, out, plan) in enumerate(plans):
            if index not in summaries and all(
                (run_folder(out, arm, seed) / "result.json").is_file()
                for seed in range(config.seeds)
                for arm in plan.arms
            ):
                summaries[index] = summarise_out(config, out, plan, report)

    for key in [key for key in copies if key in finished]:
        settle(key)
    settle(None)
    if jobs == 1:
        for key, (train_config, config, folder, label) in todo.items():
            record = train_and_evaluate(train_config, config, folder, report, label)
            write_json_atomic(folder / "result.json", record)
            settle(key)
    elif todo:
        # Spawned, not forked: each worker starts its own torch with its own threads.
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            submitted = {pool.submit(_train_and_store, *job): key for key, job in todo.items()}
            for job in as_completed(submitted):
                job.result()  # a worker's error, raised here
                settle(submitted[job])
    return [summaries[index] for index in range(len(plans))]


def _run_numbers(out: Path, arm: str, seed: int) -> RunNumbers:
    path = run_folder(out, arm, seed) / "result.json"
    return _read(path, RunNumbers, "not a run's record: delete its folder to run it again")


def training_seconds(runs: Sequence[tuple[ExperimentConfig, Path]]) -> tuple[int, float]:
    """The distinct models of finished runs and the sum of their training wall seconds (each
    model once, however many arms share it): the compute a full run of them costs."""
    seconds = {
        run_key(train_config, config): _run_numbers(out, arm, seed).training.train_seconds
        for config, out, arm, seed, train_config in _slots(
            [(config, out, plan_of(config)) for config, out in runs]
        )
    }
    return len(seconds), sum(seconds.values())


def summarise_out(
    config: ExperimentConfig, out: Path, plan: Plan, report: Report
) -> ExperimentSummary:
    records = {
        arm: [_run_numbers(out, arm, seed) for seed in range(config.seeds)] for arm in plan.arms
    }
    arms, depth = config.graph
    setting = f"G({arms},{depth}), {config.steps} steps per model, {config.n} fresh graphs per T"
    summary = summarise(config.name, plan.claim, setting, records, config.temperatures)
    write_json_atomic(out / "experiment.json", summary.to_dict())
    write_text_atomic(out / "table.md", table_markdown(summary))
    write_text_atomic(out / "plot.svg", plot_svg(summary))
    report(f"wrote {out / 'experiment.json'}, {out / 'table.md'}, {out / 'plot.svg'}")
    return summary

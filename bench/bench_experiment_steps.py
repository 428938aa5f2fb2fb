"""Seconds per training step of every experiment arm, for sizing a full run (docs/training.md).

    .venv/bin/python bench/bench_experiment_steps.py [--steps 20] [--repeats 2]

Trains every arm of every experiment (and `loop-data` and `margin` on G(5,5)) for `--steps`
steps at the default sizes on one thread, `--repeats` times, and prints the wall seconds of
each (model build and save included); the `batch` arms train their matched-walk step counts.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from loopfix.experiments import EXPERIMENTS
from loopfix.experiments.base import base_recipe
from loopfix.experiments.registry import HARDER_GRAPH, SIZE_AXIS
from loopfix.lab.config import TrainConfig
from loopfix.lab.train import train


def arm_configs(steps: int) -> dict[str, TrainConfig]:
    configs = {}
    for graph in ((3, 3), HARDER_GRAPH):
        for name, experiment in EXPERIMENTS.items():
            if graph != (3, 3) and name not in SIZE_AXIS:
                continue
            for arm, config in experiment.arms(base_recipe(steps, 1, graph)).items():
                configs[f"G({graph[0]},{graph[1]}) {name} / {arm}"] = config
    return configs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    options = parser.parse_args()
    configs = arm_configs(options.steps)
    seconds: dict[str, list[float]] = {key: [] for key in configs}
    for _ in range(options.repeats):
        for key, config in configs.items():
            with tempfile.TemporaryDirectory() as folder:
                started = time.perf_counter()
                train(config, Path(folder) / "model")
                seconds[key].append(round(time.perf_counter() - started, 2))
    for key, values in seconds.items():
        print(f"{key}: {configs[key].steps} steps, {values} s")


if __name__ == "__main__":
    main()

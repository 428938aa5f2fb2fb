"""Seconds per training step of every experiment arm, for sizing a full run (docs/training.md).

    .venv/bin/python bench/bench_experiment_steps.py [--steps 30] [--repeats 1] [--graph 3,3]

Trains every distinct arm of every experiment on G(K, D) (arms with the same training config,
such as the experiments' shared baseline, once: as `lab experiment all` does) for `--steps`
steps at the default sizes on one thread, `--repeats` times, and prints the wall seconds of
each (model build and save included; the `batch` arms train their matched-walk step counts),
then their sum: the training seconds of one seed of `all` at `--steps`, on one core.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from loopfix.experiments import EXPERIMENTS
from loopfix.experiments.base import base_recipe
from loopfix.lab.config import TrainConfig
from loopfix.lab.train import train


def distinct_arms(steps: int, graph: tuple[int, int]) -> dict[str, TrainConfig]:
    """Arm label -> config, the first arm of each distinct config only."""
    configs: dict[str, TrainConfig] = {}
    for name, experiment in EXPERIMENTS.items():
        for arm, config in experiment.arms(base_recipe(steps, 1, graph)).items():
            if config not in configs.values():
                configs[f"{name} / {arm}"] = config
    return configs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--graph", default="3,3", help="K,D")
    options = parser.parse_args()
    arms, depth = (int(x) for x in options.graph.split(","))
    configs = distinct_arms(options.steps, (arms, depth))
    seconds: dict[str, list[float]] = {key: [] for key in configs}
    for _ in range(options.repeats):
        for key, config in configs.items():
            with tempfile.TemporaryDirectory() as folder:
                started = time.perf_counter()
                train(config, Path(folder) / "model")
                seconds[key].append(round(time.perf_counter() - started, 2))
    for key, values in seconds.items():
        print(f"G({arms},{depth}) {key}: {configs[key].steps} steps, {values} s")
    total = sum(min(values) for values in seconds.values())
    print(f"{len(configs)} distinct models, {total:.1f} s in all (the fastest of each)")


if __name__ == "__main__":
    main()

"""Where a student of the experiments' base recipe passes from guessing moves to solving the
task (docs/training.md, "How long a full run takes"): train one baseline and evaluate it.

    PYTHONPATH=src .venv/bin/python bench/bench_train_transition.py STEPS LEARNING_RATE SEED

Trains `experiments.base.base_recipe(STEPS, 1)` (the bundled `stargraph-clean` recipe on one
thread) with that peak learning rate and seed into a temporary folder, evaluates it with the
testbed evaluation at --n 200, T = 0, 0.6, 1.0, and prints the final loss, the wall seconds and
T = 0's success and outcomes.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

from loopfix.experiments.base import base_recipe
from loopfix.lab.config import LabEvalConfig
from loopfix.lab.train import train
from loopfix.models import load_model
from loopfix.scan.testbed import evaluate_testbed


def main() -> None:
    steps, learning_rate, seed = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    config = base_recipe(steps, 1).model_copy(update={"learning_rate": learning_rate, "seed": seed})
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        record = train(config, Path(folder) / "model")
        torch.set_num_threads(1)
        model, tokenizer = load_model(str(Path(folder) / "model"), device="cpu")
        evaluation = evaluate_testbed(
            model, tokenizer, LabEvalConfig(n=200, temperatures=[0.0, 0.6, 1.0])
        )
        seconds = time.perf_counter() - started
    greedy = evaluation.to_dict()["settings"][0]
    print(
        f"steps {steps}, learning rate {learning_rate:g}, seed {seed}: final loss "
        f"{record['final_loss']:.3f}, {seconds:.0f} s; T=0 success {greedy['success']:.3f}, "
        f"outcomes {greedy['outcomes']}"
    )


if __name__ == "__main__":
    main()

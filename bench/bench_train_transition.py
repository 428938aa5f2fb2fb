"""Where a student of the experiments' recipe passes from guessing moves to solving the task
(docs/training.md, "How long a full run takes"): train one baseline and evaluate it.

    PYTHONPATH=src .venv/bin/python bench/bench_train_transition.py STEPS [--seed S]
        [--graph K,D] [--learning-rate LR] [--init-std STD] [--decay-share SHARE]

Trains `experiments.base.base_recipe(STEPS, 1, (K, D))` (the experiments' recipe on one thread;
the options override its fields) into a temporary folder, evaluates it with the testbed
evaluation at --n 200, T = 0, 0.6, 1.0, and prints the final loss, the first step whose 50-step
mean loss was under 1 (the transition; "none" if it never was), the wall seconds and T = 0's
success and outcomes.
"""

from __future__ import annotations

import argparse
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--graph", default="3,3", help="K,D")
    parser.add_argument("--learning-rate", type=float)
    parser.add_argument("--init-std", type=float)
    parser.add_argument("--decay-share", type=float)
    options = parser.parse_args()
    arms, depth = (int(x) for x in options.graph.split(","))
    overrides = {
        "seed": options.seed,
        "learning_rate": options.learning_rate,
        "init_std": options.init_std,
        "decay_share": options.decay_share,
    }
    config = base_recipe(options.steps, 1, (arms, depth)).model_copy(
        update={key: value for key, value in overrides.items() if value is not None}
    )
    below: list[int] = []  # steps whose running loss was under 1

    def watch(step: int, loss: float) -> None:
        if loss < 1.0:
            below.append(step)

    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        record = train(config, Path(folder) / "model", watch)
        torch.set_num_threads(1)
        model, tokenizer = load_model(str(Path(folder) / "model"), device="cpu")
        evaluation = evaluate_testbed(
            model, tokenizer, LabEvalConfig(n=200, temperatures=[0.0, 0.6, 1.0])
        )
        seconds = time.perf_counter() - started
    greedy = evaluation.to_dict()["settings"][0]
    print(
        f"G({arms},{depth}) steps {options.steps}, learning rate {config.learning_rate:g}, init "
        f"std {config.init_std:g}, decay share {config.decay_share:g}, seed {options.seed}: "
        f"final loss {record['final_loss']:.3f}, loss under 1 from step "
        f"{below[0] + 1 if below else 'none'}, {seconds:.0f} s; "
        f"T=0 success {greedy['success']:.3f}, outcomes {greedy['outcomes']}"
    )


if __name__ == "__main__":
    main()

"""Valid files of every kind loopfix reads, each made by the real computation that writes it (a
scan, a warning fit, a patch, a suite, an experiment run), small enough for a test's fixture.
Bad-input tests damage copies of them (issue 56)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import torch

from loopfix.experiments import ExperimentConfig, run_experiment
from loopfix.lab.stargraph import looping_teacher_walk, make_graph, teacher_walk
from loopfix.models import load_model, tiny_model
from loopfix.patch import EditRequest, EditSite, build_patch, save_patch
from loopfix.scan import ScanConfig, run_scan
from loopfix.states.steps import step_signals
from loopfix.states.warning import (
    WarningProbe,
    choose_threshold,
    fit_logistic,
    step_labels,
    window_features,
)
from loopfix.suites import stargraph_suite

TESTBED = "loopfix:stargraph"
LAYER, WINDOW = 2, 4


def scan_folder(out: Path) -> Path:
    """A real scan of the testbed: scan.json and records.jsonl (loops and clean walks)."""
    config = ScanConfig(
        model=TESTBED, suite="stargraph", n=6, temperatures=[0.0], max_new_tokens=24, out=out
    )
    run_scan(config)
    return out


def warning_probe(path: Path) -> Path:
    """A warning probe fitted, as `loopfix warn` fits one, on the testbed's own signals over
    teacher walks that loop and walks that end."""
    model, _ = load_model(TESTBED, device="cpu")
    rng = random.Random(0)
    features, labels = [], []
    for index in range(8):
        graph = make_graph(rng, 3, 3)
        if index % 2:
            walk, onset = looping_teacher_walk(rng, graph, 0.5, 0.3, 24)
        else:
            walk, onset = teacher_walk(rng, graph, 0.5, 0.3), None
        signals = step_signals(model, graph.prompt_ids(), walk, LAYER)
        features.append(window_features(signals, WINDOW))
        labels.append(step_labels(len(walk), onset))
    x, y = np.concatenate(features), np.concatenate(labels)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    weights, bias = fit_logistic((x - mean) / scale, y, 0.01)
    probe = WarningProbe(TESTBED, LAYER, WINDOW, True, mean, scale, weights, bias, 1.0, {})
    clean = [
        probe.probabilities(f).max()
        for f, steps in zip(features, labels, strict=True)
        if not steps.any()
    ]
    threshold = choose_threshold([float(p) for p in clean], 0.05)
    fitted = WarningProbe(TESTBED, LAYER, WINDOW, True, mean, scale, weights, bias, threshold, {})
    path.write_text(json.dumps(fitted.to_json()))
    return path


def patch_folder(out: Path) -> Path:
    """A real patch (patch.json and patch.safetensors) of a tiny Llama."""
    model = tiny_model("llama", seed=1)
    direction = torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(7))
    request = EditRequest(EditSite(0, "down_proj"), direction, torch.tensor([0, 3, 4]), 6.0)
    save_patch(build_patch(model, [request], model_id="tiny"), out)
    return out


def suite_file(path: Path) -> Path:
    """A suite file of built-in items with each checker's meta (stargraph, sequence, tasks)."""
    from loopfix.suites import load_suite

    items = [*stargraph_suite(2, 0), *load_suite("sequence", 2, 0), *load_suite("tasks", 2, 0)]
    path.write_text("".join(json.dumps(item.to_dict()) + "\n" for item in items))
    return path


def experiment_folder(out: Path) -> Path:
    """A finished `lab experiment margin` at the smallest size: plan.json and each run's
    result.json."""
    config = ExperimentConfig(name="margin", steps=2, n=2, seeds=2, temperatures=[0.0])
    run_experiment(config, out, lambda line: None)
    return out

"""What reading the early warning online costs the decode engine (issue 41: under 5% of a step).

    PYTHONPATH=src .venv/bin/python bench/bench_warning_cost.py [--model loopfix:smollm2]
        [--n 16] [--max-new-tokens 128] [--repeats 3] [--threads 1]

Generates the same greedy outputs (the `tasks` suite's first N prompts, one batch) with no
warning and with a warning reading layer 2/3 deep (a random probe of the right width: the cost
does not depend on the weights), alternating (none, warning, warning, none, ...), `--repeats`
times each, and prints the process's CPU seconds per generated token of each and the ratio of
their medians (CPU time: on a shared machine, wall time moves with the other jobs more than
with the warning). The outputs must be equal (the warning only reads). Then the warning's own
work per decode step, timed alone on N rows (what the end-to-end ratio cannot resolve when
other jobs share the machine): the step's top-1 and entropy over the vocabulary, and the
projection of the states and each row's probability; and one row's probability after 1k, 4k,
16k and 32k steps (the online cost must not grow with the output).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from loopfix.backends.hf import generate
from loopfix.models import load_model
from loopfix.records import DecodeSettings
from loopfix.states.warning import SIGNALS, WarningProbe, default_layer
from loopfix.suites import load_suite
from loopfix.suites.render import prompt_ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="loopfix:smollm2")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    model, tokenizer = load_model(options.model, device="cpu")
    prompts = [prompt_ids(item, tokenizer) for item in load_suite("tasks", options.n, 0)]
    settings = DecodeSettings(temperature=0.0, max_new_tokens=options.max_new_tokens)
    width = model.config.get_text_config().hidden_size
    layer = default_layer(model.config.get_text_config().num_hidden_layers)
    rng = np.random.default_rng(0)
    size = width + SIGNALS
    probe = WarningProbe(
        options.model,
        layer,
        16,
        True,
        np.zeros(size),
        np.ones(size),
        rng.normal(size=size) / np.sqrt(size),
        0.0,
        2.0,  # never fires: every step is read to the end
        {},
    )
    seconds: dict[str, list[float]] = {"none": [], "warning": []}
    outputs: dict[str, list[list[int]]] = {}
    for repeat in range(options.repeats):
        for arm in list(seconds)[:: 1 if repeat % 2 == 0 else -1]:
            started = time.process_time()
            generations = generate(
                model,
                tokenizer,
                prompts,
                settings,
                options.n,
                warning=probe if arm == "warning" else None,
            )
            elapsed = time.process_time() - started
            tokens = sum(len(g.tokens) for g in generations)
            seconds[arm].append(elapsed / tokens)
            outputs[arm] = [g.tokens for g in generations]
    assert outputs["none"] == outputs["warning"], "the warning changed an output"
    none, warned = (statistics.median(seconds[arm]) for arm in ("none", "warning"))
    print(f"model {options.model}, layer {layer}, {options.n} prompts, batch {options.n}")
    for arm, values in seconds.items():
        print(f"{arm}: CPU ms per generated token {[round(1000 * v, 3) for v in values]}")
    print(f"median ratio warning / none: {warned / none:.3f}")
    step = none * options.n  # CPU seconds of one decode step of N rows, without the warning
    signals, reading = _component_seconds(probe, options.n, width, model.config.vocab_size)
    for length, seconds_per_step in _history_seconds(probe).items():
        print(f"one row's probability after {length} steps: {1e6 * seconds_per_step:.1f} us")
    print(
        f"per decode step of {options.n} rows: {1000 * step:.1f} ms; the warning's work "
        f"{1000 * (signals + reading):.2f} ms ({100 * (signals + reading) / step:.2f}%: "
        f"top-1 and entropy {1000 * signals:.2f} ms, states read {1000 * reading:.2f} ms)"
    )


def _history_seconds(
    probe: WarningProbe, lengths: tuple[int, ...] = (1_000, 4_000, 16_000, 32_000)
) -> dict[int, float]:
    """CPU seconds of one row's `step_probability` with a history of each length, in a loop
    (every entropy low, the streak's worst case): flat if the cost does not grow with it."""
    result = {}
    for length in lengths:
        values = [0.01] * length
        started = time.process_time()
        for _ in range(2000):
            probe.step_probability(values, values, values)
        result[length] = (time.process_time() - started) / 2000
    return result


def _component_seconds(
    probe: WarningProbe, rows: int, width: int, vocabulary: int, repeats: int = 200
) -> tuple[float, float]:
    """CPU seconds per step of the two parts of the engine's warning work (engine/loop.py:
    `draw`'s signals, `_warn`), on random values of the real shapes."""
    logits = torch.randn(rows, vocabulary)
    started = time.process_time()
    for _ in range(repeats):
        log_probs = torch.log_softmax(logits, dim=-1)
        probs = log_probs.exp()
        probs.max(dim=-1).values.tolist()
        (-(probs * log_probs).nan_to_num(0.0).sum(dim=-1)).tolist()
    signals = (time.process_time() - started) / repeats
    states = torch.randn(rows, width)
    history = [list(np.random.default_rng(row).random(100)) for row in range(rows)]
    started = time.process_time()
    for _ in range(repeats):
        projected = probe.project(states.numpy()).tolist()
        for row in range(rows):
            values = history[row]
            probe.step_probability(values + [projected[row]], values, values)
    reading = (time.process_time() - started) / repeats
    return signals, reading


if __name__ == "__main__":
    main()

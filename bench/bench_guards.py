"""Per-step overhead of each loopfix guard next to HF's processors and a recomputing DRY.

    .venv/bin/python bench/bench_guards.py                      # batch 8, contexts 1k/8k/32k
    .venv/bin/python bench/bench_guards.py --contexts 1024 --steps 5 --json out.json

Steps:
1. Per context length, build a batch of token histories: Zipf-distributed tokens over the
   vocabulary (natural text's shape), with one looping row (a 40-token unit repeated over the
   last quarter) so DRY's long repeats are exercised.
2. For each guard: start it on the histories (setup, reported apart), then time `steps`
   decode steps of one new token per row + `apply` on a (batch, vocab) logits tensor.
3. The same for HF's RepetitionPenalty and NoRepeatNGram processors (they rescan `input_ids`
   each step) and for two DRYs that recompute from the whole context each step: llama.cpp's
   Z-algorithm ported to Python, and a vectorised numpy version of the same rule.
4. Print one table of median milliseconds per step (and write JSON when asked).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from transformers import NoRepeatNGramLogitsProcessor, RepetitionPenaltyLogitsProcessor

from loopfix.guards import GuardContext, parse_guards
from loopfix.guards.dry_reference import dry_penalties, dry_repeat_lengths

GUARDS: dict[str, dict[str, object]] = {
    "penalty": {"penalty.repetition": 1.1, "penalty.presence": 0.5, "penalty.frequency": 0.1},
    "dynamic-penalty": {},
    "dry": {"dry.breaker_ids": [0, 1]},
    "ngram": {"ngram.size": 3, "ngram.window": 512},
    "entropy-temp": {},
    "adaptive-temp": {},
    "phase-temp": {"phase-temp.mode": "position"},
    "rescue": {},
    "cut": {},
}
BREAKERS = {0, 1}


def histories(batch: int, context: int, vocab: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    rows = [list((rng.zipf(1.3, context) % vocab).astype(int)) for _ in range(batch)]
    unit = list(rng.integers(2, vocab, 40))
    loop_start = context - context // 4
    rows[0][loop_start:] = (unit * (context // 40 + 1))[: context - loop_start]
    return rows


def time_steps(step: Callable[[int], None], steps: int) -> float:
    """Median seconds of one step."""
    times = []
    for index in range(steps):
        start = time.perf_counter()
        step(index)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_guard(name: str, rows: list[list[int]], vocab: int, steps: int) -> tuple[float, float]:
    """(setup seconds, median seconds per step)."""
    chain = parse_guards(name, GUARDS[name], GuardContext(vocab))
    start = time.perf_counter()
    for row, history in enumerate(rows):
        chain.add(row, history, temperature=0.6, seed=row)
    setup = time.perf_counter() - start
    logits = torch.randn(len(rows), vocab)
    nexts = [history[-40] for history in rows]  # rows keep going the way they went

    def step(index: int) -> None:
        for row, token in enumerate(nexts):
            chain.extend(row, [token])
        chain.apply(logits.clone())

    return setup, time_steps(step, steps)


def bench_hf(processor: Callable, rows: list[list[int]], vocab: int, steps: int) -> float:
    ids = torch.tensor(rows)
    logits = torch.randn(len(rows), vocab)
    state = {"ids": ids}

    def step(index: int) -> None:
        state["ids"] = torch.cat([state["ids"], state["ids"][:, -40:-39]], dim=1)
        processor(state["ids"], logits.clone())

    return time_steps(step, steps)


def numpy_repeat_lengths(tokens: np.ndarray, allowed: int, breakers: set[int]) -> dict[int, int]:
    """The same answer as `dry_repeat_lengths`, vectorised: extend all matches one token a step."""
    n = len(tokens)
    hits = np.flatnonzero(np.isin(tokens, list(breakers)))
    limit = n - 1 - int(hits[-1]) if hits.size else n
    if n <= allowed or limit < allowed:
        return {}
    ends = np.flatnonzero(tokens[:-1] == tokens[-1])
    lengths = np.ones(len(ends), dtype=np.int64)
    alive = np.arange(len(ends))
    m = 1
    while alive.size and m < limit:
        back = ends[alive] - m
        keep = back >= 0
        alive, back = alive[keep], back[keep]
        alive = alive[tokens[back] == tokens[n - 1 - m]]
        lengths[alive] += 1
        m += 1
    lengths = np.minimum(lengths, limit)
    chosen = lengths >= allowed
    followers, found = tokens[ends[chosen] + 1], lengths[chosen]
    best: dict[int, int] = {}
    for token, length in zip(followers.tolist(), found.tolist(), strict=True):
        best[token] = max(best.get(token, 0), length)
    return best


def bench_recompute(rows: list[list[int]], vocab: int, steps: int, vectorised: bool) -> float:
    histories_ = [list(history) for history in rows]
    logits = torch.randn(len(rows), vocab)

    def step(index: int) -> None:
        out = logits.clone()
        for row, history in enumerate(histories_):
            history.append(history[-40])
            if vectorised:
                lengths = numpy_repeat_lengths(np.asarray(history), 2, BREAKERS)
            else:
                lengths = dry_repeat_lengths(history, 2, BREAKERS)
            penalties = dry_penalties(lengths, 0.8, 1.75, 2, BREAKERS)
            if penalties:
                tokens = torch.tensor(list(penalties))
                out[row, tokens] -= torch.tensor(list(penalties.values()))

    return time_steps(step, steps)


def run(contexts: list[int], batch: int, vocab: int, steps: int, slow_steps: int) -> dict:
    results: dict[str, dict[str, float]] = {}
    for context in contexts:
        rows = histories(batch, context, vocab, seed=context)
        column: dict[str, float] = {}
        for name in GUARDS:
            setup, per_step = bench_guard(name, rows, vocab, steps)
            column[name] = per_step
            column[f"{name} setup"] = setup
        column["HF RepetitionPenalty"] = bench_hf(
            RepetitionPenaltyLogitsProcessor(1.1), rows, vocab, steps
        )
        column["HF NoRepeatNGram(3)"] = bench_hf(
            NoRepeatNGramLogitsProcessor(3), rows, vocab, slow_steps
        )
        column["DRY recompute (llama.cpp Z, Python)"] = bench_recompute(
            rows, vocab, slow_steps, vectorised=False
        )
        column["DRY recompute (numpy)"] = bench_recompute(rows, vocab, steps, vectorised=True)
        results[str(context)] = column
        print(f"context {context}: done", flush=True)
    return results


def table(results: dict[str, dict[str, float]]) -> str:
    contexts = list(results)
    names = [name for name in next(iter(results.values())) if not name.endswith("setup")]
    lines = [
        "| per step, batch of rows (ms) | " + " | ".join(contexts) + " |",
        "|---|" + "---:|" * len(contexts),
    ]
    for name in names:
        cells = " | ".join(f"{results[c][name] * 1e3:.2f}" for c in contexts)
        lines.append(f"| {name} | {cells} |")
    dry = [results[c]["dry"] for c in contexts]
    for baseline in ("DRY recompute (llama.cpp Z, Python)", "DRY recompute (numpy)"):
        ratios = " | ".join(
            f"{d / results[c][baseline]:.3f}" for d, c in zip(dry, contexts, strict=True)
        )
        lines.append(f"| dry / {baseline} | {ratios} |")
    setups = " | ".join(f"{results[c]['dry setup']:.2f} s" for c in contexts)
    lines.append(f"| dry setup (whole batch, once) | {setups} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", default="1024,8192,32768")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per guard")
    parser.add_argument("--slow-steps", type=int, default=3, help="steps for the rescanning ones")
    parser.add_argument("--json", default=None, help="also write the numbers here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    contexts = [int(c) for c in args.contexts.split(",")]
    results = run(contexts, args.batch, args.vocab, args.steps, args.slow_steps)
    print(table(results))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                {"batch": args.batch, "vocab": args.vocab, "results": results}, handle, indent=1
            )


if __name__ == "__main__":
    main()

"""Loop-detector benchmarks, side by side in one run.

    python bench/bench_detect.py [--repeats 5]

1. LoopMonitor.push: per-token cost at 1k, 4k, 16k and 32k tokens into a stream (should stay
   flat), the lengths measured in interleaved rounds; in the looping stream the second half
   loops (from token 16,250), so the 32k stream runs the reporting path.
2. find_ngram_loop vs a straightforward recount (a Counter of tuple n-grams, stopping at the
   first count of k) at 8k tokens, on a stream without a loop and on one with a loop.
3. LoopMonitor.push_batch over 64 streams: microseconds per token per stream.
4. find_periodic_tail and detect_text on long inputs, for scale; and detect_text with the default
   tiers on a real 32k-token reasoning text (the can-ai-code traces of the corpus joined, clean,
   and the same ending in a real looping trace), the bar being 1 s.

Each timing is the best of --repeats runs (the machine may be shared); the median is shown too.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from loopfix.detect import (
    LoopMonitor,
    detect_text,
    find_ngram_loop,
    find_periodic_tail,
    split_text,
)

VOCAB = 50_000
CORPUS = Path(__file__).resolve().parents[1] / "data" / "detect_corpus_real" / "corpus.jsonl"
REAL_TOKENS = 32_000


def timed(function: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(best, median) wall seconds of `function` over `repeats` runs, after one warm-up run."""
    function()
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        runs.append(time.perf_counter() - started)
    return min(runs), statistics.median(runs)


def recount(tokens: list[int], n: int, k: int) -> tuple[int, int] | None:
    """The straightforward metric: count every n-gram as a tuple until one reaches k."""
    counts: Counter[tuple[int, ...]] = Counter()
    for start in range(len(tokens) - n + 1):
        gram = tuple(tokens[start : start + n])
        counts[gram] += 1
        if counts[gram] == k:
            return start, counts[gram]
    return None


def stream(length: int, looping: bool, seed: int = 0) -> list[int]:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, VOCAB, length)
    if looping:  # the second half loops on a 37-token unit
        unit = rng.integers(0, VOCAB, 37)
        half = length // 2
        tokens[half:] = np.resize(unit, length - half)
    return tokens.tolist()


LENGTHS = (1_000, 4_000, 16_000, 32_000)
CHUNK = 500


def bench_monitor(repeats: int) -> None:
    print("1. LoopMonitor.push, one stream, max_period 512: us per token at each stream length")
    print(f"   the next {CHUNK} tokens pushed into a stream already {'/'.join(map(str, LENGTHS))}")
    print("   tokens long, the lengths interleaved round by round (so load changes hit all alike);")
    print(f"   best and median over {20 * repeats} rounds")
    print(f"   {'tokens':>7} {'iid best':>9} {'iid med':>8} {'loop best':>10} {'loop med':>9}")
    table = {}
    for looping in (False, True):
        tokens = stream(LENGTHS[-1] + CHUNK, looping)
        # A monitor filled to each length once; every round times a fresh copy of it.
        filled = {}
        for length in LENGTHS:
            monitor = LoopMonitor()
            for token in tokens[:length]:
                monitor.push(token)
            filled[length] = monitor
        runs = {length: [] for length in LENGTHS}
        for round_ in range(20 * repeats + 1):  # the first round warms up
            for length in LENGTHS:
                monitor = copy.deepcopy(filled[length])
                chunk = tokens[length : length + CHUNK]
                started = time.perf_counter()
                for token in chunk:
                    monitor.push(token)
                if round_:
                    runs[length].append((time.perf_counter() - started) / CHUNK * 1e6)
        table[looping] = {n: (min(v), statistics.median(v)) for n, v in runs.items()}
    for length in LENGTHS:
        iid_best, iid_median = table[False][length]
        loop_best, loop_median = table[True][length]
        values = f"{iid_best:>9.2f} {iid_median:>8.2f} {loop_best:>10.2f} {loop_median:>9.2f}"
        print(f"   {length // 1000:>6}k {values}")
    first, last = LENGTHS[0], LENGTHS[-1]
    ratios = [table[looping][last][1] / table[looping][first][1] for looping in (False, True)]
    print(
        f"   median at {last // 1000}k / median at {first // 1000}k: iid {ratios[0]:.2f}, loop "
        f"{ratios[1]:.2f}"
    )


def bench_ngram(repeats: int) -> None:
    print("2. n-gram metric (n=30, k=20) at 8k tokens (ms)")
    print(f"   {'stream':>8} {'recount':>9} {'find_ngram_loop':>16} {'speed-up':>9}")
    for looping in (False, True):
        tokens = stream(8_000, looping)
        array = np.asarray(tokens)
        assert (recount(tokens, 30, 20) is None) == (find_ngram_loop(array) is None)
        slow, _ = timed(lambda tokens=tokens: recount(tokens, 30, 20), repeats)
        fast, _ = timed(lambda array=array: find_ngram_loop(array), repeats)
        label = "loop" if looping else "iid"
        print(f"   {label:>8} {slow * 1e3:>9.2f} {fast * 1e3:>16.3f} {slow / fast:>8.1f}x")
    tokens = stream(8_000, False)
    slow, _ = timed(lambda: recount(tokens, 30, 20), repeats)
    fast, _ = timed(lambda: find_ngram_loop(tokens), repeats)
    speed = f"{slow * 1e3:>9.2f} {fast * 1e3:>16.3f} {slow / fast:>8.1f}x"
    print(f"   {'iid list':>8} {speed}  (input a Python list)")


def bench_batch(repeats: int) -> None:
    print("3. LoopMonitor.push_batch, 64 streams x 2000 steps (us per token per stream)")
    rng = np.random.default_rng(1)
    steps = rng.integers(0, VOCAB, (2_000, 64))
    steps[1000:, :8] = np.resize(rng.integers(0, VOCAB, 23), (1000, 1))  # 8 streams loop

    def run() -> None:
        monitor = LoopMonitor(n_streams=64)
        for column in steps:
            monitor.push_batch(column)

    best, median = timed(run, repeats)
    per = 1e6 / (steps.shape[0] * steps.shape[1])
    print(f"   best {best * per:.2f}, median {median * per:.2f}")


def bench_offline(repeats: int) -> None:
    print("4. offline checks on long inputs (ms)")
    for looping in (False, True):
        tokens = np.asarray(stream(32_000, looping))
        best, _ = timed(lambda tokens=tokens: find_periodic_tail(tokens), repeats)
        print(
            f"   find_periodic_tail, 32k tokens, {'loop' if looping else 'iid'}: {best * 1e3:.2f}"
        )
    paragraph = "Wait, let me verify that 84 squared is 7056. 84 * 84 = 7056. Yes.\n\n"
    words = " ".join(f"word{i % 997}" for i in range(20_000))
    for label, text in (("looping", words[:40_000] + paragraph * 300), ("clean", words)):
        best, _ = timed(lambda text=text: detect_text(text), repeats)
        print(f"   detect_text, {len(text) // 1000}k chars, {label}: {best * 1e3:.1f}")


def real_trace(looping: bool) -> str:
    """REAL_TOKENS built-in tokens of real reasoning text: the corpus's clean can-ai-code traces
    joined; when `looping`, the text ends in the part's first verbatim loop instead."""
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    unseen = [row for row in rows if row["split"] == "unseen" and row["id"].startswith("cac-")]
    tail = next(r["text"] for r in unseen if r["kind"] == "verbatim") if looping else ""
    budget = REAL_TOKENS - len(split_text(tail))
    clean = "\n\n".join(row["text"] for row in unseen if row["label"] == "clean")
    ends = split_text(clean).ends
    return clean[: int(ends[budget - 1])] + ("\n\n" + tail if tail else "")


def bench_real_trace(repeats: int) -> None:
    print(f"5. detect_text, default tiers, a real {REAL_TOKENS // 1000}k-token reasoning text (s)")
    print(f"   {'text':>8} {'tokens':>7} {'cut=None best':>14} {'median':>7} {'cut=True best':>14}")
    for looping in (False, True):
        text = real_trace(looping)
        best, median = timed(partial(detect_text, text), repeats)
        cut_best, _ = timed(partial(detect_text, text, cut=True), repeats)
        label = "looping" if looping else "clean"
        tokens = len(split_text(text))
        print(f"   {label:>8} {tokens:>7} {best:>14.3f} {median:>7.3f} {cut_best:>14.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    versions = f"python {platform.python_version()}, numpy {np.__version__}"
    print(f"{versions}, {os.cpu_count()} CPUs, load average {load:.2f}")
    bench_monitor(args.repeats)
    bench_ngram(args.repeats)
    bench_batch(args.repeats)
    bench_offline(args.repeats)
    bench_real_trace(args.repeats)


if __name__ == "__main__":
    main()

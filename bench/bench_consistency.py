"""What each consistency check costs, side by side with one greedy pass over the same prompts.

    .venv/bin/python bench/bench_consistency.py [--model loopfix:stargraph] [--n 32]
        [--max-new-tokens 64] [--threads 1] [--checks all|cheap]

The baseline row is the unit: one greedy generation of every prompt at batch 1 on the decode
engine (what `loopfix scan` does for one setting). Each check then runs alone on a fresh
session (no runs shared with other checks), so its time is what it costs by itself; the last
rows are the cheap set `doctor` runs (one shared session) and every check together. Model
loading is excluded; the backend check includes starting vLLM when .venv-vllm exists (its
CPU time is the vLLM subprocess's, which this process does not count: read the wall column).
Wall time on a shared machine is inflated by other load; CPU time (this process, all threads)
is not, so the CPU column is the comparable one.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="loopfix:stargraph")
    parser.add_argument("--suite", default="stargraph")
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--checks", choices=("all", "cheap"), default="all")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from loopfix.backends.hf import generate
    from loopfix.consistency import (
        CHEAP_CHECKS,
        CHECK_NAMES,
        ConsistencyConfig,
        run_consistency,
    )
    from loopfix.models import load_model
    from loopfix.records import DecodeSettings
    from loopfix.suites import load_suite
    from loopfix.suites.render import prompt_ids

    model, tokenizer = load_model(args.model, device="cpu")
    options = {"model": args.model, "suite": args.suite, "n": args.n}
    options["max_new_tokens"] = args.max_new_tokens
    prompts = [prompt_ids(item, tokenizer) for item in load_suite(args.suite, args.n, 0)]
    settings = DecodeSettings(max_new_tokens=args.max_new_tokens)
    started, cpu = time.perf_counter(), time.process_time()
    generate(model, tokenizer, prompts, settings, 1)
    unit, unit_cpu = time.perf_counter() - started, time.process_time() - cpu
    print(
        f"{args.model}, {args.n} prompts, max_new_tokens {args.max_new_tokens}, "
        f"{args.threads} threads"
    )
    print(f"{'':40s} {'wall':>8s}          {'CPU':>8s}")
    print(f"{'baseline: one greedy pass, batch 1':40s} {unit:8.1f} s x1.0   {unit_cpu:8.1f} s x1.0")

    def timed(label: str, checks: list[str]) -> None:
        config = ConsistencyConfig.model_validate({**options, "checks": checks})
        started, cpu = time.perf_counter(), time.process_time()
        result = run_consistency(config, model, tokenizer)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        statuses = ", ".join(c.status for c in result.checks) if len(checks) == 1 else ""
        print(
            f"{label:40s} {seconds:8.1f} s x{seconds / unit:<4.1f} "
            f"{cpu:8.1f} s x{cpu / unit_cpu:<4.1f} {statuses}"
        )

    names = CHECK_NAMES if args.checks == "all" else CHEAP_CHECKS
    for name in names:
        timed(name, [name])
    timed("cheap set (doctor), one session", list(CHEAP_CHECKS))
    if args.checks == "all":
        timed("every check, one session", list(CHECK_NAMES))


if __name__ == "__main__":
    main()

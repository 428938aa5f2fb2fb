"""Every way out of a thinking loop, judged by answers (issue 52, point 1; docs/thinking.md).

On the `think` suite's held-out prompts, two `loopfix compare` runs paired against `none`:
1. the watch-based arms: `cut` (stop at detection), `rescue` (roll back and ban), think-escape
   (`rescue[escape=think_end]`: force `</think>` at detection), think-escape on restated steps
   too (`restated=true`: the detector's circling check, which needs no repeated text), and
   `dry`, `penalty`, `ngram`;
2. the blind arms, sized from what think-escape did in run 1: a thinking budget at fixed sizes
   and at think-escape's mean thinking length (matched), and the random-exit control, which
   forces `</think>` at a point drawn per prompt from the range of think-escape's exits, with no
   detection at all. Run 2 reuses run 1's `none` (copied: the same prompts, seeds and settings,
   so the scan resumes with nothing to generate), so both are paired against one baseline.

    python bench/think_exits.py loopfix:smollm2-think --out runs/exits --temperature 0

Resumable (each arm is a scan directory). Prints one markdown table: answers first (rescues,
regressions, exact McNemar p), then cuts, loops inside / after the thinking, mean tokens,
mean thinking tokens.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
from pathlib import Path

from loopfix.guard_summaries import CompareResult, GuardEntry
from loopfix.records import read_samples
from loopfix.scan.config import ScanConfig
from loopfix.scan.guard_comparison import run_compare
from loopfix.scan.guard_config import CompareConfig

RESTATED = "rescue[escape=think_end;restated=true]"
WATCHED = ["none", "cut", "rescue", "rescue[escape=think_end]", RESTATED, "dry", "penalty", "ngram"]
BUDGETS = (64, 128, 256)
ESCAPE = "rescue[escape=think_end]"


def _escape_exits(entry: GuardEntry) -> list[int]:
    """The thought tokens at which think-escape forced `</think>`, one per escaped sample."""
    exits = []
    for sample in read_samples(Path(entry.run) / "records.jsonl"):
        for rescue in sample.meta.get("guards", {}).get("rescues", []):
            if "forced" in rescue:
                exits.append(int(rescue["position"]))
                break
    return exits


def _row(entry: GuardEntry) -> str:
    summary, paired = entry.summary, entry.paired
    thinking = summary.thinking
    cells = [
        f"`{entry.guard}`",
        "–" if paired is None else str(paired.rescues),
        "–" if paired is None else str(paired.regressions),
        "–" if paired is None else f"{paired.mcnemar_p:.3g}",
        f"{summary.cut_rate.measured:.0%}",
        "–" if thinking is None else str(thinking.loops_in_thinking),
        "–" if thinking is None else str(thinking.loops_after_thinking),
        f"{summary.accuracy.measured:.0%}",
        "–" if summary.mean_length is None else f"{summary.mean_length:.0f}",
        "–"
        if thinking is None or thinking.mean_thinking_tokens is None
        else f"{thinking.mean_thinking_tokens:.0f}",
    ]
    return "| " + " | ".join(cells) + " |"


HEAD = (
    "| arm | rescued | lost | McNemar p | cut | loops in thinking | loops after | accuracy "
    "| mean tokens | mean thinking tokens |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


AGREE_HEAD = "| arm | prompts judged alike | right here | right there |\n|---|---:|---:|---:|"


def _agreement(entry: GuardEntry, other_runs: Path, temperature_dir: str) -> str:
    """How many prompts this arm and the same arm of another run judge alike (both right or
    both wrong), and each run's right answers, over the prompts both hold."""
    path = other_runs / entry.guard / temperature_dir / "records.jsonl"
    theirs = {sample.prompt_id: bool(sample.correct) for sample in read_samples(path)}
    ours = {
        sample.prompt_id: bool(sample.correct)
        for sample in read_samples(Path(entry.run) / "records.jsonl")
        if sample.prompt_id in theirs
    }
    alike = sum(ours[key] == theirs[key] for key in ours)
    right_there = sum(theirs[key] for key in ours)
    return f"| `{entry.guard}` | {alike}/{len(ours)} | {sum(ours.values())} | {right_there} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-new-tokens", type=int, default=384)
    parser.add_argument("--batch-size", type=int, default=30)
    parser.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    parser.add_argument(
        "--arms",
        help="comma-separated watched arms to run instead of all, and no blind arms (those are "
        "sized from think-escape's exits, which only the hf engine records)",
    )
    parser.add_argument(
        "--agree-with",
        type=Path,
        help="another run's --out (say the hf run, for a vllm one): per arm, the prompts whose "
        "answer both runs judge alike",
    )
    args = parser.parse_args()
    temperature_dir = f"T{args.temperature:g}"

    def compare(guards: list[str], out: Path) -> CompareResult:
        scan = ScanConfig(
            model=args.model,
            suite="think",
            seed=args.seed,
            n=args.n,
            temperatures=[args.temperature],
            max_new_tokens=args.max_new_tokens,
            batch_size=args.batch_size,
            backend=args.backend,
            out=out,
        )
        return run_compare(CompareConfig(scan=scan, guards=guards))

    arms = WATCHED if args.arms is None else ["none", *args.arms.split(",")]
    watched = compare(list(dict.fromkeys(arms)), args.out / "watched")
    if args.agree_with is not None:
        print(AGREE_HEAD)
        for entry in watched.entries:
            print(_agreement(entry, args.agree_with / "watched" / "runs", temperature_dir))
    if args.arms is not None:
        print(HEAD)
        for entry in watched.entries:
            print(_row(entry))
        return
    escape = next(entry for entry in watched.entries if entry.guard == ESCAPE)
    exits = _escape_exits(escape)
    if not exits:
        raise SystemExit(f"think-escape forced no exit in {escape.run}: nothing to match")
    thinking = escape.summary.thinking
    assert thinking is not None and thinking.mean_thinking_tokens is not None
    matched = round(thinking.mean_thinking_tokens)
    low, high = min(exits), max(exits)
    blind_arms = [
        "none",
        *(f"think-budget[tokens={size}]" for size in sorted({*BUDGETS, matched})),
        f"think-budget[tokens={high};low={low}]",
    ]
    baseline = args.out / "blind" / "runs" / "none" / temperature_dir
    if not baseline.exists():
        shutil.copytree(args.out / "watched" / "runs" / "none" / temperature_dir, baseline)
    blind = compare(blind_arms, args.out / "blind")
    print(
        f"think-escape forced {len(exits)} exits, at {low}..{high} generated tokens "
        f"(median {statistics.median(exits):.0f}); its mean thinking length {matched} tokens is "
        f"the matched budget; the random-exit control draws from [{low}, {high}]"
    )
    print(HEAD)
    seen = set()
    for entry in [*watched.entries, *blind.entries]:
        if entry.guard not in seen:
            seen.add(entry.guard)
            print(_row(entry))


if __name__ == "__main__":
    main()

"""Re-run a repair headline of README.md / docs/repair.md and print it as the docs state it, with
the commit it was measured at (issue 54: every repair headline reproduces at the current commit
or names the commit it holds at).

    python bench/repair_headlines.py NAME --out DIR [--reuse]

NAME is one of HEADLINES below (the docs' commands, unchanged). The repair runs into DIR
(`loopfix repair ... --out DIR`, resumable where the repair resumes: its own scan); the commit
(`git rev-parse HEAD`, "+changes" when the tree differs from it) is written to DIR/commit.txt
before the run starts. `--reuse` prints the headline of a finished DIR without running.
These runs take 30-75 minutes of 2 cores each: no test runs them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THINKER = ["loopfix:smollm2-think", "--suite", "think", "--max-new-tokens", "384"]
HEADLINES: dict[str, list[str]] = {
    # README.md and docs/repair.md: the SmolLM2 `arith` repair with the defaults.
    "smollm2-arith": ["loopfix:smollm2", "--suite", "arith", "--threads", "2"],
    # docs/repair.md "Which edit, on which model": the thinker, columns and neurons.
    "thinker-columns": [*THINKER, "--source", "rescue", "--threads", "2"],
    "thinker-neurons": [*THINKER, "--source", "rescue", "--search", "neuron", "--threads", "2"],
    # docs/real-model.md: Gemma 3 270M on `tasks`.
    "gemma3-tasks": (
        "loopfix:gemma3-270m --suite tasks --n 120 --prompts 60 --max-new-tokens 160 --threads 1"
    ).split(),
}


def commit() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head + ("+changes" if changed else "")


def headline(out: Path) -> str:
    verify = json.loads((out / "verify.json").read_text())
    if verify.get("stopped_at"):
        return f"stopped at {verify['stopped_at']}: {verify['verdict']}"
    candidate = verify["candidate"]
    lines = [
        f"{candidate['label']}: {verify['touched_fraction']:.4%} of the weights, perplexity "
        f"{verify['perplexity']['ratio'] - 1:+.2%}, KL {verify['kl']:.4f}",
        f"{'accepted' if verify['accepted'] else 'rejected'} "
        f"(routes passed: {', '.join(verify['routes_passed']) or 'none'})",
    ]
    for temperature, answers in verify["answers"].items():
        arms = verify["by_temperature"][temperature]
        lines.append(
            f"T={temperature}: loops {arms['base']['loop_rate']:.1%} -> "
            f"{arms['patched']['loop_rate']:.1%}; answers {answers['rescues']} recovered / "
            f"{answers['regressions']} lost (p {answers['mcnemar_p']:.2g}); controls' net "
            f"{answers['controls_net']}"
        )
    lines.append(f"{verify['timing']['total_seconds'] / 60:.0f} min")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(HEADLINES))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reuse", action="store_true", help="print a finished run's headline")
    args = parser.parse_args()
    if not args.reuse:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "commit.txt").write_text(commit() + "\n")
        command = ["loopfix", "repair", *HEADLINES[args.name], "--out", str(args.out)]
        print(" ".join(command), flush=True)
        subprocess.run(command, check=True)
    measured_at = args.out / "commit.txt"
    at = measured_at.read_text().strip() if measured_at.exists() else "unknown"
    print(f"{args.name}, measured at {at}:\n{headline(args.out)}")


if __name__ == "__main__":
    main()

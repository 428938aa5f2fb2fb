"""Stuck-agent detection on the labelled public trajectories of data/agent_trajectories/:
loopfix's rule against OpenHands' and gemini-cli's published rules, precision and recall per
kind on one split, the agreement (Cohen's kappa) of the two labelling passes, and the proxy's
per-request cost of the agent check on histories of growing length.

    PYTHONPATH=src .venv/bin/python bench/bench_agent_loops.py --split held-out
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from loopfix.agents import KINDS, AgentVerdict, Step, detect_stuck, sniff
from loopfix.agents.baselines import BASELINES
from loopfix.serve.agent_check import stuck_agent

CORPUS = Path(__file__).resolve().parents[1] / "data" / "agent_trajectories"
COST_CHAT = CORPUS / "items" / "mini-swe-agent__deepseek_chat_test_1-100__django__django-11620.json"
"""A real 117-call chat, tiled to the history lengths the cost is measured at."""
COST_LENGTHS = (100, 1_000, 10_000)
NEAR_MISS = "repeat-signature"
"""The manifest's `selection` of runs chosen for a reply repeated 3 times in a row: those
labelled not stuck are the hard negatives, whose false alarms are reported apart."""
Label = dict[str, object]


def kappa(first: list[str], second: list[str]) -> float | None:
    """Cohen's kappa of two labellings (None when chance agreement is total)."""
    classes = set(first) | set(second)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / len(first)
    chance = sum((first.count(c) / len(first)) * (second.count(c) / len(second)) for c in classes)
    return None if chance == 1 else (observed - chance) / (1 - chance)


def ratio(hits: int, total: int) -> str:
    return f"{hits}/{total}" + ("" if total == 0 else f" ({hits / total:.2f})")


def table(
    rows: list[tuple[Label, list[Step]]], detector: Callable[[list[Step]], AgentVerdict]
) -> list[str]:
    verdicts = [detector(steps) for _, steps in rows]
    labels = [label for label, _ in rows]
    stuck = [bool(label["stuck"]) for label in labels]
    called = [verdict.stuck for verdict in verdicts]
    true_positive = sum(s and c for s, c in zip(stuck, called, strict=True))
    false_alarms = sum(c and not s for s, c in zip(stuck, called, strict=True))
    cells = [
        f"precision {ratio(true_positive, sum(called))}",
        f"recall {ratio(true_positive, sum(stuck))}",
        f"false alarms on not-stuck {ratio(false_alarms, stuck.count(False))}",
    ]
    for kind in KINDS:
        labelled = [v for label, v in zip(labels, verdicts, strict=True) if label["kind"] == kind]
        said = [label for label, v in zip(labels, verdicts, strict=True) if v.kind == kind]
        if labelled or said:
            caught = sum(v.stuck for v in labelled)
            right = sum(label["kind"] == kind for label in said)
            recall, precision = ratio(caught, len(labelled)), ratio(right, len(said))
            cells.append(f"{kind}: recall {recall}, precision {precision}")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "held-out", "all"), default="held-out")
    args = parser.parse_args()
    manifest = {row["file"]: row for row in map(json.loads, (CORPUS / "manifest.jsonl").open())}
    labelled = [json.loads(line) for line in (CORPUS / "labels.jsonl").open()]
    passes = [
        [json.dumps(row[name], sort_keys=True) for row in labelled] for name in ("pass1", "pass2")
    ]
    rows: list[tuple[Label, list[Step]]] = []
    near_misses: list[list[Step]] = []
    for row in labelled:
        if args.split in ("all", manifest[row["file"]]["split"]):
            (trajectory,) = sniff(CORPUS / row["file"]) or []
            rows.append((row["pass1"], trajectory.steps))
            if manifest[row["file"]].get("selection") == NEAR_MISS and not row["pass1"]["stuck"]:
                near_misses.append(trajectory.steps)
    positives = sum(bool(label["stuck"]) for label, _ in rows)
    print(f"split {args.split}: {len(rows)} trajectories, {positives} stuck (pass 1 labels)")
    agreement = kappa(*passes)
    print(
        f"labelling passes: kappa {'undefined' if agreement is None else f'{agreement:.2f}'} "
        f"over all {len(labelled)} items"
    )
    detectors = {"loopfix": detect_stuck, **BASELINES}
    print(
        "| detector | "
        + " | ".join(["stuck precision", "stuck recall", "false alarms", "per kind"])
        + " |"
    )
    print("|---|---|---|---|---|")
    for name, detector in detectors.items():
        cells = table(rows, detector)
        print(f"| {name} | " + " | ".join([*cells[:3], "; ".join(cells[3:]) or "-"]) + " |")
    print(
        f"false alarms on the {len(near_misses)} near misses (a reply repeated 3 times in a row, "
        "labelled not stuck: edge-case probes and reverts), apart: "
        + ", ".join(
            f"{name} {sum(detector(steps).stuck for steps in near_misses)}"
            for name, detector in detectors.items()
        )
    )
    proxy_cost()


def proxy_cost() -> None:
    """Process CPU time of the proxy's check (`stuck_agent`, the default tail) per request."""
    from loopfix.agents import AgentConfig

    chat = json.loads(COST_CHAT.read_text())["messages"]
    print("| messages in the history | agent check per request (ms, process CPU) |")
    print("|---|---|")
    for length in COST_LENGTHS:
        history = (chat * (length // len(chat) + 1))[:length]
        repeats = 50
        start = time.process_time()
        for _ in range(repeats):
            stuck_agent(history, AgentConfig())
        print(f"| {length:,} | {(time.process_time() - start) / repeats * 1000:.2f} |")


if __name__ == "__main__":
    main()

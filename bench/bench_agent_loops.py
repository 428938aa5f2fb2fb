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
from loopfix.serve import ServeConfig
from loopfix.serve.agent_check import Conversations, stuck_agent

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
    onsets = sum(
        v.stuck and label["stuck"] and v.onset_turn == label["onset_turn"]
        for label, v in zip(labels, verdicts, strict=True)
    )
    cells = [
        f"precision {ratio(true_positive, sum(called))}",
        f"recall {ratio(true_positive, sum(stuck))} (the labelled onset turn: {onsets})",
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
    parser.add_argument(
        "--split",
        choices=("tune", "held-out", "fresh", "all"),
        default="held-out",
        help="fresh: the round from new sources, labelled by two blind labellers before any "
        "detector ran on it",
    )
    args = parser.parse_args()
    manifest = {row["file"]: row for row in map(json.loads, (CORPUS / "manifest.jsonl").open())}
    labelled = [
        row
        for row in map(json.loads, (CORPUS / "labels.jsonl").open())
        if args.split in ("all", manifest[row["file"]]["split"])
    ]
    passes = [
        [json.dumps(row[name], sort_keys=True) for row in labelled] for name in ("pass1", "pass2")
    ]
    stuck_passes = [[str(row[name]["stuck"]) for row in labelled] for name in ("pass1", "pass2")]
    rows: list[tuple[Label, list[Step]]] = []
    near_misses: list[list[Step]] = []
    sources: dict[str, list[tuple[Label, list[Step]]]] = {}
    for row in labelled:
        (trajectory,) = sniff(CORPUS / row["file"]) or []
        rows.append((row["pass1"], trajectory.steps))
        sources.setdefault(manifest[row["file"]]["repo"], []).append(rows[-1])
        if manifest[row["file"]].get("selection") == NEAR_MISS and not row["pass1"]["stuck"]:
            near_misses.append(trajectory.steps)
    positives = sum(bool(label["stuck"]) for label, _ in rows)
    print(f"split {args.split}: {len(rows)} trajectories, {positives} stuck (pass 1 labels)")
    print(
        "labelling passes: kappa "
        + ", ".join(
            f"{'undefined' if value is None else f'{value:.2f}'} on {what}"
            for what, value in (("stuck", kappa(*stuck_passes)), ("label", kappa(*passes)))
        )
        + f" (stuck, kind and onset) over the split's {len(labelled)} items"
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
    if len(sources) > 1:
        print("| source | trajectories | stuck | loopfix caught | loopfix false alarms |")
        print("|---|---|---|---|---|")
        for repo, items in sorted(sources.items()):
            said = [detect_stuck(steps).stuck for _, steps in items]
            truth = [bool(label["stuck"]) for label, _ in items]
            caught = sum(s and t for s, t in zip(said, truth, strict=True))
            wrong = sum(s and not t for s, t in zip(said, truth, strict=True))
            print(f"| {repo} | {len(items)} | {sum(truth)} | {caught} | {wrong} |")
    proxy_cost()


def proxy_cost() -> None:
    """Process CPU time of the proxy's check (`stuck_agent`, default settings) per request: on
    the tail of the history, and for a named conversation whose steps were read up to its
    last assistant turn by the request before (the steady state of an agent that sends its
    history once per turn)."""
    from loopfix.agents import AgentConfig

    chat = json.loads(COST_CHAT.read_text())["messages"]
    config = AgentConfig()
    print("| messages in the history | tail read (ms) | named conversation (ms) |")
    print("|---|---|---|")
    for length in COST_LENGTHS:
        history = (chat * (length // len(chat) + 1))[:length]
        repeats = 50
        cells = []
        for conversation in (None, "run"):
            kept = Conversations(ServeConfig(upstream="http://127.0.0.1:1").agent_memory_chars)
            stuck_agent(history, config, kept, conversation)
            start = time.process_time()
            for _ in range(repeats):
                stuck_agent(history, config, kept, conversation)
            cells.append(f"{(time.process_time() - start) / repeats * 1000:.2f}")
        print(f"| {length:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

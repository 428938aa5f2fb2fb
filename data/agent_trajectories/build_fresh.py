"""Rebuild the `fresh` split (README.md, "The fresh round") from pinned snapshots of its public
GitHub repositories.

    PYTHONPATH=src python data/agent_trajectories/build_fresh.py MIRRORS OUT

Reads every source file with `git --git-dir=MIRRORS/OWNER+NAME/repo show COMMIT:PATH` (bare
clones of the pinned commits), selects items by the rules in README.md (fixed before any item
was read for content), keeps the fields a reader needs, trims every long text with `trim.py`,
and writes OUT/items/ and OUT/manifest.jsonl: the committed items of split `fresh` and their
manifest rows, byte for byte. No detector code is imported or run.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trim  # noqa: E402  (the project's trimmer: trim.trimmed, trim.trim)

if len(sys.argv) != 3:
    sys.exit(__doc__)
MIRRORS, OUT = Path(sys.argv[1]), Path(sys.argv[2])
ITEMS = OUT / "items"


def git_show(repo: str, commit: str, path: str) -> bytes:
    git_dir = MIRRORS / repo.replace("/", "+") / "repo"
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
        capture_output=True,
        check=True,
    ).stdout


def git_ls(repo: str, commit: str) -> list[str]:
    git_dir = MIRRORS / repo.replace("/", "+") / "repo"
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", commit],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    return out.splitlines()


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


_DIGITS = re.compile(r"\d+")
K = TypeVar("K", str, int)


def repeat_signature(results: list[str | None]) -> bool:
    """Three consecutive results equal once digits are masked, empty results set aside."""
    seq = [_DIGITS.sub("N", r.strip()) for r in results if r is not None and r.strip()]
    return any(seq[i] == seq[i + 1] == seq[i + 2] for i in range(len(seq) - 2))


def choose(
    keys: dict[K, str],
    counts: tuple[int, int, int],
    length: dict[K, int],
    results: dict[K, list[str | None]],
) -> dict[K, str]:
    """The selection rule of every source, by `keys` (the path hashed): the `counts` of
    hash-sample (smallest hashes), longest (most steps among the rest) and repeat-signature
    (the first by hash among the rest whose results repeat)."""
    hashed, longest, repeating = counts
    ranked = sorted(keys, key=lambda key: sha(keys[key]))
    chosen = dict.fromkeys(ranked[:hashed], "hash-sample")
    rest = [key for key in ranked if key not in chosen]
    by_length = sorted(rest, key=lambda key: (-length[key], sha(keys[key])))
    chosen.update(dict.fromkeys(by_length[:longest], "longest"))
    rest = [key for key in ranked if key not in chosen]
    repeats = [key for key in rest if repeat_signature(results[key])]
    chosen.update(dict.fromkeys(repeats[:repeating], "repeat-signature"))
    return chosen


def write(name: str, data: dict) -> int:
    path = ITEMS / name
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path.stat().st_size


# ---------------------------------------------------------------- source A: Multi-SWE-bench
A_REPO = "multi-swe-bench/experiments"
A_COMMIT = "89888f1604001fcd80b0799a37af42a1bfebfd8f"
A_PREFIX = "evaluation/java/verified/"
A_PER_MODEL_HASH = 5
A_PER_MODEL_LONGEST = 2
A_PER_MODEL_REPEAT = 1


def source_a() -> list[dict]:
    paths = [
        p
        for p in git_ls(A_REPO, A_COMMIT)
        if p.startswith(A_PREFIX) and "/trajs/" in p and p.endswith(".traj")
    ]
    by_model: dict[str, list[str]] = {}
    for p in paths:
        by_model.setdefault(p.split("/")[3], []).append(p)
    rows = []
    for submission in sorted(by_model):
        model = submission.split("_SWE-agent_", 1)[1]
        raw = {p: json.loads(git_show(A_REPO, A_COMMIT, p)) for p in by_model[submission]}
        chosen = choose(
            {p: p for p in raw},
            (A_PER_MODEL_HASH, A_PER_MODEL_LONGEST, A_PER_MODEL_REPEAT),
            {p: len(raw[p]["trajectory"]) for p in raw},
            {p: [e.get("observation") for e in raw[p]["trajectory"]] for p in raw},
        )
        for p, rule in chosen.items():
            instance = Path(p).name[: -len(".traj")]
            name = f"multi-swe-bench__{model}__{instance}.traj"
            size = write(name, trim.trimmed(raw[p]))
            rows.append(
                {
                    "file": f"items/{name}",
                    "repo": A_REPO,
                    "commit": A_COMMIT,
                    "path": p,
                    "group": instance,
                    "split": "fresh",
                    "selection": rule,
                    "model": model,
                    "agent": "SWE-agent (0.x, Multi-SWE-bench Java)",
                    "format": "swe-agent-traj",
                    "bytes": size,
                }
            )
    return rows


# ---------------------------------------------------------------- source B: tau-bench
B_REPO = "sierra-research/tau-bench"
B_COMMIT = "59a200c6d575d595120f1cb70fea53cef0632f6b"
B_PATH = "historical_trajectories/gpt-4o-airline.json"
B_HASH = 12
B_LONGEST = 4
B_REPEAT = 4


def source_b() -> list[dict]:
    records = json.loads(git_show(B_REPO, B_COMMIT, B_PATH))
    chosen = choose(
        {i: f"{B_PATH}#{i}" for i in range(len(records))},
        (B_HASH, B_LONGEST, B_REPEAT),
        {i: len(record["traj"]) for i, record in enumerate(records)},
        {
            i: [m.get("content") for m in record["traj"] if m["role"] == "tool"]
            for i, record in enumerate(records)
        },
    )
    rows = []
    for i, rule in sorted(chosen.items()):
        rec = records[i]
        instance = f"airline-task{rec['task_id']}-trial{rec['trial']}"
        data = {"instance_id": instance, "messages": rec["traj"]}
        name = f"tau-bench__gpt-4o__{instance}.json"
        size = write(name, trim.trimmed(data))
        rows.append(
            {
                "file": f"items/{name}",
                "repo": B_REPO,
                "commit": B_COMMIT,
                "path": B_PATH,
                "record": i,
                "group": f"tau-bench-airline-task{rec['task_id']}",
                "split": "fresh",
                "selection": rule,
                "model": "gpt-4o",
                "agent": "tau-bench tool-calling agent (airline domain, simulated user)",
                "format": "openai",
                "bytes": size,
            }
        )
    return rows


# ---------------------------------------------------------------- source C: course snapshots
C_FILES = [
    (
        "apurv-sawant15/SWE-Agent-Trajectory-Analysis",
        "c3da9e5359dbb0ec9d1e19d5365e533bfda2fac0",
        "Qwen-2.5-Coder-Instruct-trajs/django__django-11815/django__django-11815.traj",
        "qwen2.5-coder-instruct",
    ),
    (
        "apurv-sawant15/SWE-Agent-Trajectory-Analysis",
        "c3da9e5359dbb0ec9d1e19d5365e533bfda2fac0",
        "Qwen-2.5-Coder-Instruct-trajs/scikit-learn__scikit-learn-14087/scikit-learn__scikit-learn-14087.traj",
        "qwen2.5-coder-instruct",
    ),
    (
        "RLin8103/cs598-swe-agent-trajectory-analysis-group8",
        "f6ccbefc064c0478e2fc9ce7fd9793277cbdbcf1",
        "trajs/sweagent_lm/scikit-learn__scikit-learn-25102/scikit-learn__scikit-learn-25102.traj",
        "swe-agent-lm",
    ),
]


def source_c() -> list[dict]:
    rows = []
    for repo, commit, path, model in C_FILES:
        raw = json.loads(git_show(repo, commit, path))
        instance = Path(path).name[: -len(".traj")]
        name = f"swe-agent-course__{model}__{instance}.traj"
        size = write(name, trim.trimmed(raw))
        rows.append(
            {
                "file": f"items/{name}",
                "repo": repo,
                "commit": commit,
                "path": path,
                "group": instance,
                "split": "fresh",
                "selection": "all-available-non-claude",
                "model": model,
                "agent": "SWE-agent 1.x",
                "format": "swe-agent-traj",
                "bytes": size,
            }
        )
    return rows


def main() -> None:
    ITEMS.mkdir(parents=True, exist_ok=True)
    for old in ITEMS.iterdir():
        old.unlink()
    rows = source_a() + source_b() + source_c()
    with open(OUT / "manifest.jsonl", "w") as f:
        for row in rows:
            row = {k: v for k, v in row.items() if k != "bytes"}
            f.write(json.dumps(row) + "\n")
    print(len(rows), "items")


if __name__ == "__main__":
    main()

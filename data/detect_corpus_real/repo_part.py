"""What the corpus parts taken from public repositories share (thinking_llms_interp.py,
contrastive_search.py, misguided_attention.py, can_ai_code.py, pm_llm_benchmark.py): files
read at a pinned commit of a git snapshot, the part's labels file `NAME_labels.tsv` (file, item,
label, kind, note per line), and the part's `NAME.jsonl`, one item per labelled line."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MAX_CHARS = 20_000  # a long trace keeps its end: a loop runs to the end, and the rule reads it


def last_chars(text: str) -> tuple[str, str]:
    """The text an item keeps (its last MAX_CHARS characters) and what its note says about it."""
    if len(text) <= MAX_CHARS:
        return text, ""
    return text[-MAX_CHARS:], f" (last 20,000 of {len(text):,} chars kept)"


@dataclass(frozen=True)
class Label:
    path: str  # the file in the repository
    item: str  # the item's place in that file
    label: str
    kind: str
    note: str


def show(git_dir: Path, commit: str, path: str) -> str:
    shown = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
    )
    try:
        return shown.stdout.decode("utf-8")
    except UnicodeDecodeError:
        # Some repositories keep Windows-1252 text (pm-llm-benchmark): read it as written.
        return shown.stdout.decode("cp1252")


def labelled(
    name: str, git_dir: Path, load: Callable[[Path, str], Any]
) -> Iterator[tuple[Label, Any]]:
    """Every label of part `name` with its file's content (`load(git_dir, path)`, read once)."""
    files: dict[str, Any] = {}
    for line in (HERE / f"{name}_labels.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label = Label(*line.split("\t"))
        if label.path not in files:
            files[label.path] = load(git_dir, label.path)
        yield label, files[label.path]


def item(
    label: Label,
    *,
    repo: str,
    commit: str,
    item_id: str,
    text: str,
    cut: bool | None,
    model: str,
    prompt: str,
    category: str = "model-generation",
) -> dict[str, Any]:
    """One corpus item: its source is the labelled file at the pinned commit, and its source
    group (the split is drawn by it) one per model and prompt, whatever the decoding, as for
    scan records."""
    return {
        "id": item_id,
        "text": text,
        "label": label.label,
        "kind": label.kind,
        "cut": cut,
        "source": f"https://github.com/{repo}/blob/{commit}/{label.path} (item {label.item})",
        "group": f"{repo}:{model}:{prompt}",
        "category": category,
        "note": label.note,
    }


def write_part(name: str, items: list[dict[str, Any]]) -> None:
    with (HERE / f"{name}.jsonl").open("w", encoding="utf-8") as out:
        for entry in items:
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")
    print(f"{len(items)} items")

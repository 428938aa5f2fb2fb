"""Assemble corpus.jsonl from its parts (run from the repository root):

    python data/detect_corpus_real/build.py SCAN_RECORDS.jsonl [...]

Parts: issue_excerpts.jsonl (model outputs quoted in public issue threads, written by
issue_excerpts.py), negatives.jsonl (real program outputs and package files, written by
collect_negatives.py), thinking_llms_interp.jsonl, contrastive_search.jsonl,
misguided_attention.jsonl, can_ai_code.jsonl and pm_llm_benchmark.jsonl (generations saved in
public repositories, written by the scripts of the same names), and loopfix scan records of
real models (SmolLM2-135M-Instruct on the arith suite, the stargraph testbed), labelled by hand in
labels.tsv (id, label, kind, note). semantic_relabel.tsv then sets the label of every semantic
candidate and clean reasoning trace of the generators that produce semantic loops, decided by
the written rule of semantic_rule.md in two blind passes and adjudicated (issue 41).

The split is fixed by source, before any tuning: a source group (the issue URL, the file or
program, or the model and prompt of a scan record) is held out when the first hex digit of
sha256(group) is even, so one source never lands on both sides. A part in UNSEEN_PARTS is a
whole source held out apart (split `unseen`): the tune part never holds any of it, so it
measures the detector on generators it never saw.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABEL_RULE = (
    "loop: a unit (token, phrase, line, block; for near loops the same template with changing "
    "numbers; for semantic loops the same content reworded) occurs >= 3 times in a row without "
    "progress, ending at the end of the output (or at the excerpt's end), or >= 10 times in a row "
    "anywhere; clean: otherwise, including structured text whose rows carry new content"
)

SEMANTIC_RULE = (
    "semantic_rule.md (issue 41): semantic loop when the last 3 or more steps restate earlier "
    "steps' computation and conclusion with no new method, fact, intermediate result or answer "
    "and the text runs to its end so; exact or near copies are a loop of their kind; clean "
    "otherwise, including re-checks that end in something new or in a written final answer"
)


# Parts held out whole, evaluated apart from the sha256 held-out part, and labelled by the
# written rule in two passes (issue 53).
UNSEEN_PARTS = ("can_ai_code.jsonl", "pm_llm_benchmark.jsonl")


def split_of(group: str) -> str:
    return "heldout" if int(hashlib.sha256(group.encode()).hexdigest()[0], 16) % 2 == 0 else "tune"


def scan_items(paths: list[Path], labels: dict[str, list[str]]) -> list[dict]:
    items = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            settings = record["settings"]
            model = "smollm2-135m-instruct" if "smollm2" in str(path) else "stargraph"
            item_id = f"{model}-{record['prompt_id']}-t{settings['temperature']}"
            if item_id not in labels:
                continue
            label, kind, note = labels[item_id]
            suite = record["prompt_id"].rsplit("-", 2)[0]
            items.append(
                {
                    "id": item_id,
                    "text": record["text"],
                    "label": label,
                    "kind": kind,
                    "cut": record["finish_reason"] == "length",
                    "source": f"loopfix scan of {model} (suite {suite}, seed {settings['seed']}, "
                    f"temperature {settings['temperature']}, max_new_tokens "
                    f"{settings['max_new_tokens']}); records in data/detect_corpus_real/scans/",
                    "group": f"{model}:{record['prompt_id']}",
                    "category": "model-generation",
                    "note": note,
                }
            )
    return items


def relabel(items: list[dict]) -> None:
    """Apply semantic_relabel.tsv: its label and kind, the rule it was decided by, and the
    label it replaced in the note."""
    rows = {}
    for line in (HERE / "semantic_relabel.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            item_id, was, *_, label, kind, note = line.split("\t")
            rows[item_id] = (was, label, kind, note)
    by_id = {item["id"]: item for item in items}
    if missing := rows.keys() - by_id.keys():
        raise SystemExit(f"semantic_relabel.tsv names items the corpus lacks: {sorted(missing)}")
    for item_id, (was, label, kind, note) in rows.items():
        item = by_id[item_id]
        item.update(label=label, kind=kind, label_rule=SEMANTIC_RULE)
        item["note"] = note if was == "new" else f"{note} (before: {was}; {item['note']})"


def part_items(part: str) -> list[dict]:
    items = []
    for line in (HERE / part).read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        item.setdefault("group", item["source"])
        items.append(item)
    return items


def main() -> None:
    labels = {}
    for line in (HERE / "labels.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            item_id, label, kind, note = line.split("\t")
            labels[item_id] = [label, kind, note]
    items = []
    for part in (
        "issue_excerpts.jsonl",
        "negatives.jsonl",
        "thinking_llms_interp.jsonl",
        "contrastive_search.jsonl",
        "misguided_attention.jsonl",
    ):
        items += part_items(part)
    items += scan_items([Path(p) for p in sys.argv[1:]], labels)
    for part in UNSEEN_PARTS:
        # Labelled by semantic_rule.md in two passes; no group: the whole part is `unseen`.
        items += [{**item, "group": None, "label_rule": SEMANTIC_RULE} for item in part_items(part)]
    relabel(items)
    with (HERE / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for item in items:
            item.setdefault("label_rule", LABEL_RULE)
            group = item.pop("group")
            item["split"] = "unseen" if group is None else split_of(group)
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{len(items)} items")


if __name__ == "__main__":
    main()

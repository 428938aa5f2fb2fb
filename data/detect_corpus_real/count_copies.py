"""How many near-verbatim copies of one step a thinking holds: the count by which the disputed
items of the unseen parts were adjudicated under semantic_rule.md's "10+ times anywhere"
(README.md, "Whole sources held out"). Reads only the texts, never the detector:

    python data/detect_corpus_real/count_copies.py PART.jsonl [ID ...]

A step is a sentence of 40+ characters or a paragraph of 80+ in the thinking (the text before
`</think>` or `</thought>`), digits masked; two steps are copies when equal or at least 0.85
similar (difflib ratio). Prints, per item, the most copied sentence's and paragraph's counts."""

from __future__ import annotations

import difflib
import json
import re
import sys

SIMILAR = 0.85


def normal(step: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\d+", "N", step.strip()))


def most_copied(steps: list[str]) -> tuple[int, str]:
    groups: list[list] = []  # [first step, copies]
    for step in steps:
        for group in groups:
            if group[0] == step or (
                abs(len(group[0]) - len(step)) < 0.2 * len(step)
                and difflib.SequenceMatcher(None, group[0], step, autojunk=False).ratio() > SIMILAR
            ):
                group[1] += 1
                break
        else:
            groups.append([step, 1])
    first, copies = max(groups, key=lambda group: group[1], default=["", 0])
    return copies, first


def copies(text: str) -> tuple[tuple[int, str], tuple[int, str]]:
    thinking = re.split(r"</think>|</thought>", text)[0]
    sentences = [s for s in re.split(r"(?<=[.!?])\s+|\n+", thinking) if len(s.strip()) >= 40]
    paragraphs = [p for p in re.split(r"\n\s*\n", thinking) if len(p.strip()) >= 80]
    return most_copied([normal(s) for s in sentences]), most_copied([normal(p) for p in paragraphs])


def main() -> None:
    wanted = set(sys.argv[2:])
    for line in open(sys.argv[1], encoding="utf-8"):
        item = json.loads(line)
        if wanted and item["id"] not in wanted:
            continue
        (sentence, first), (paragraph, _) = copies(item["text"])
        print(f"{item['id']}\t{sentence} sentences\t{paragraph} paragraphs\t{first[:80]!r}")


if __name__ == "__main__":
    main()

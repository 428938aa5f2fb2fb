"""Labelled corpora of outputs, and the detector's precision and recall on them.

A corpus is a JSON-lines file; each line holds `id`, `text`, `label` (`loop` or `clean`), `kind`
(`verbatim`, `near`, `segment`, `semantic`, or `none` for clean items), `cut` (whether the output
was cut at the token limit; null when unknown) and `split` (`tune` or `heldout`), plus free
provenance fields (`source`, `label_rule`, `note`). The project's corpus of real outputs is
data/detect_corpus_real/ (docs/detection.md).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .api import detect_text
from .config import DetectConfig
from .verdict import LOOP_KINDS, LoopVerdict

_LABELS = ("loop", "clean")


@dataclass(frozen=True)
class CorpusItem:
    """One labelled output."""

    id: str
    text: str
    label: str
    kind: str
    cut: bool | None
    split: str
    source: str = ""  # where the text came from (a URL, or a note), when the file says


@dataclass(frozen=True)
class Judged:
    """An item with the detector's verdict on it."""

    item: CorpusItem
    verdict: LoopVerdict


def read_corpus(path: Path, split: str | None = None) -> list[CorpusItem]:
    """The items of a corpus file (only those of `split` when given); a malformed line raises
    ValueError naming the file, line and field."""
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{where}: not JSON ({error.msg})") from None
        if data.get("label") not in _LABELS:
            raise ValueError(f"{where}: field 'label' must be 'loop' or 'clean'")
        if data["label"] == "clean" and data.get("kind") is None:
            data["kind"] = "none"
        expected_kinds = LOOP_KINDS if data["label"] == "loop" else ("none",)
        if data.get("kind") not in expected_kinds:
            raise ValueError(f"{where}: field 'kind' must be one of {', '.join(expected_kinds)}")
        if not isinstance(data.get("text"), str) or not data["text"]:
            raise ValueError(f"{where}: field 'text' must be a non-empty string")
        if data.get("cut") not in (True, False, None):
            raise ValueError(f"{where}: field 'cut' must be true, false or null")
        item = CorpusItem(
            str(data.get("id", number)),
            data["text"],
            data["label"],
            data["kind"],
            data.get("cut"),
            str(data.get("split", "")),
            str(data.get("source", "")),
        )
        if split is None or item.split == split:
            items.append(item)
    if not items:
        raise ValueError(f"{path}: no items" + (f" in split {split!r}" if split else ""))
    return items


def judge_corpus(
    items: Iterable[CorpusItem], config: DetectConfig | None = None, use_cut: bool = True
) -> list[Judged]:
    """The default verdict on each item, told whether it was cut when the item knows and
    `use_cut` is set."""
    return [
        Judged(item, detect_text(item.text, config=config, cut=item.cut if use_cut else None))
        for item in items
    ]


@dataclass(frozen=True)
class Scores:
    """Precision, recall and counts at one score threshold."""

    threshold: float
    loops: int
    flagged: int
    true_flags: int
    recall_by_kind: dict[str, tuple[int, int]]

    @property
    def precision(self) -> float:
        return self.true_flags / self.flagged if self.flagged else float("nan")

    @property
    def recall(self) -> float:
        return self.true_flags / self.loops if self.loops else float("nan")


def _flagged(judged: Judged, threshold: float) -> bool:
    verdict = judged.verdict
    return verdict.looping and (verdict.score is None or verdict.score >= threshold)


def score_corpus(judged: Sequence[Judged], threshold: float = 0.0) -> Scores:
    """Precision and recall of the verdicts whose score reaches `threshold` (0: every loop
    verdict, the default operating point); recall per labelled kind as (found, loops)."""
    loops: Counter[str] = Counter()
    found: Counter[str] = Counter()
    flagged = true_flags = 0
    for entry in judged:
        hit = _flagged(entry, threshold)
        is_loop = entry.item.label == "loop"
        flagged += hit
        true_flags += hit and is_loop
        if is_loop:
            loops[entry.item.kind] += 1
            found[entry.item.kind] += hit
    by_kind = {kind: (found[kind], loops[kind]) for kind in LOOP_KINDS}
    return Scores(threshold, sum(loops.values()), flagged, true_flags, by_kind)

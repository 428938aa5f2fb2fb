"""De-loop a distillation / SFT dataset (seed 001: de-loop the teacher's outputs before training
the student): drop looping samples, or cut them after the first copy of the repeating unit."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from .inputs import InputError, Record, read_records, set_path
from .verdict import LoopVerdict

CleanMode = Literal["drop", "cut"]


_BOUNDARY = re.compile(r"[.!?。！？]\s+|\n+")
_ENDS_AT_BOUNDARY = re.compile(r"(?:[.!?。！？]\s*|\n)$")


def cut_text(text: str, verdict: LoopVerdict) -> str:
    """The text before the loop's onset plus one copy of its unit, completed to the end of its
    sentence or line: the periodic run often starts mid-sentence, where the text before the loop
    happens to end like the unit does."""
    if not verdict.looping or verdict.span is None or verdict.span.char_start is None:
        return text
    unit = len(verdict.evidence or "")
    end = verdict.span.char_start + unit
    if not _ENDS_AT_BOUNDARY.search(text[:end]):
        boundary = _BOUNDARY.search(text, end, end + unit)
        if boundary is not None:
            end = boundary.end()
    return text[:end]


@dataclass
class CleanReport:
    """What `clean_lines` did: records kept unchanged, cut or dropped, loops by kind, errors."""

    kept: int = 0
    cut: int = 0
    dropped: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    errors: list[InputError] = field(default_factory=list)

    @property
    def checked(self) -> int:
        return self.kept + self.cut + self.dropped


def clean_lines(
    lines: Iterable[str | InputError],
    detect: Callable[[str], LoopVerdict],
    mode: CleanMode,
    text_field: str = "text",
    report: CleanReport | None = None,
) -> Iterator[str]:
    """Yield the output JSONL lines: records without a loop unchanged (byte for byte), looping
    records dropped or with each looping text cut. Lines that cannot be checked are not
    written; each is listed in `report.errors`. Counts go into `report`."""
    report = report if report is not None else CleanReport()
    for item in read_records(lines, text_field):
        if isinstance(item, InputError):
            report.errors.append(item)
            continue
        looping = [(text, detect(text.text)) for text in item.texts]
        looping = [(text, verdict) for text, verdict in looping if verdict.looping]
        if not looping:
            report.kept += 1
            yield item.raw
            continue
        for _, verdict in looping:
            report.kinds[verdict.kind or "unknown"] += 1
        if mode == "drop":
            report.dropped += 1
            continue
        report.cut += 1
        yield _cut_record(item, looping)


def _cut_record(record: Record, looping: list[tuple[Any, LoopVerdict]]) -> str:
    data = record.data
    for text, verdict in looping:
        set_path(data, text.path, cut_text(text.text, verdict))
    return json.dumps(data, ensure_ascii=False)

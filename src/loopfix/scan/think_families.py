"""The `think` suite's results per family and temperature, with the step judge's labels, and
the detector measured against the step judge (`python -m loopfix.scan.think_families
RUN_DIR ...` prints the tables of docs/thinking.md).

Per family and temperature: `closed` (the thinking closed and an answer followed by itself),
`correct` (the `think` checker, judged again here), `loop in thinking` (the step judge:
copies or circling, to the end of an unclosed thinking), `loop after` (the scan's loop, `is_loop`,
in an output whose thinking had closed: a run-on in the answer), and which thinking loops are
on prompts that another sample of the runs answers correctly.

Against the judge: per label, how many outputs the scan's detector (the record's verdict, what
`loopfix detect` reports on the records) calls looping, and for the thinking loops both find,
the detector's onset minus the judge's, in tokens.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

from loopfix.lab.think_teacher import THINK_FAMILIES, answer_of
from loopfix.records import Sample
from loopfix.scan.summary import is_loop
from loopfix.suites.think import check_think, think_family, think_item, thinking_closed
from loopfix.suites.think_judge import StepJudgement, judge_steps

__all__ = ["FamilyRow", "DetectRow", "detect_rows", "family_rows", "main"]


@dataclass(frozen=True)
class FamilyRow:
    family: str
    temperature: float
    n: int
    closed: int
    correct: int
    loop_in_thinking: int
    copies: int
    circling: int
    loop_after: int
    thinking_loops_solved_elsewhere: int


@dataclass(frozen=True)
class DetectRow:
    label: str
    n: int
    detected: int
    onset_errors: tuple[int, ...]
    """Detector onset minus judge onset, in tokens, where both place one."""


def _answered(sample: Sample) -> bool:
    text = sample.text
    after = text[text.rfind("</think>") + len("</think>") :]
    family = think_family(sample.prompt_id)
    return (
        thinking_closed(text)
        and sample.finish_reason == "stop"
        and answer_of(family, after) is not None
    )


def _correct(sample: Sample) -> bool:
    _, _, seed, index = sample.prompt_id.split("-")
    item = think_item(int(seed), int(index))
    assert item.answer is not None
    return check_think(sample.text, item.answer, item.meta, sample.finish_reason == "stop")


def family_rows(samples: list[Sample]) -> list[FamilyRow]:
    judged = {sample.key: judge_steps(sample.text) for sample in samples}
    correct = {sample.key: _correct(sample) for sample in samples}
    solved = {sample.prompt_id for sample in samples if correct[sample.key]}
    groups: dict[tuple[str, float], list[Sample]] = {}
    for sample in samples:
        temperature = float(sample.settings["temperature"])
        for family in (think_family(sample.prompt_id), "all"):
            groups.setdefault((family, temperature), []).append(sample)
    order = {family: rank for rank, family in enumerate((*THINK_FAMILIES, "all"))}
    rows = []
    for (family, temperature), group in sorted(
        groups.items(), key=lambda g: (g[0][1], order[g[0][0]])
    ):
        loops = [s for s in group if judged[s.key].looping]
        rows.append(
            FamilyRow(
                family=family,
                temperature=temperature,
                n=len(group),
                closed=sum(_answered(s) for s in group),
                correct=sum(correct[s.key] for s in group),
                loop_in_thinking=len(loops),
                copies=sum(judged[s.key].label == "copies" for s in loops),
                circling=sum(judged[s.key].label == "circling" for s in loops),
                loop_after=sum(is_loop(s) and thinking_closed(s.text) for s in group),
                thinking_loops_solved_elsewhere=sum(s.prompt_id in solved for s in loops),
            )
        )
    return rows


def detect_rows(
    samples: list[Sample], char_to_token: Callable[[Sample, int], int]
) -> list[DetectRow]:
    """The detector (the record's verdict) per judge label; onset errors for thinking loops."""
    by_label: dict[str, list[tuple[Sample, StepJudgement]]] = {}
    for sample in samples:
        judgement = judge_steps(sample.text)
        by_label.setdefault(judgement.label, []).append((sample, judgement))
    rows = []
    for label in ("clean", "copies", "circling"):
        pairs = by_label.get(label, [])
        errors = tuple(
            sample.loop.onset - char_to_token(sample, judgement.onset)
            for sample, judgement in pairs
            if sample.looping
            and sample.loop is not None
            and sample.loop.onset is not None
            and judgement.onset is not None
        )
        detected = sum(sample.looping for sample, _ in pairs)
        rows.append(DetectRow(label, len(pairs), detected, errors))
    return rows


def _cell(count: int, n: int) -> str:
    return f"{count} ({count / n:.0%})" if n else "–"


def format_family_rows(rows: list[FamilyRow]) -> str:
    lines = [
        "| T | family | n | closed + answer | correct | correct of closed | loop in thinking "
        "(copies / circling) | loop after thinking | thinking loops solved elsewhere |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        n = row.n
        lines.append(
            f"| {row.temperature:g} | {row.family} | {n} | {_cell(row.closed, n)} | "
            f"{_cell(row.correct, n)} | {_cell(row.correct, row.closed)} | "
            f"{_cell(row.loop_in_thinking, n)} ({row.copies} / {row.circling}) | "
            f"{_cell(row.loop_after, n)} | "
            f"{row.thinking_loops_solved_elsewhere} of {row.loop_in_thinking} |"
        )
    return "\n".join(lines)


def format_detect_rows(rows: list[DetectRow]) -> str:
    lines = [
        "| judge label | n | detector says loop | onset error, tokens (median, mean abs, n) |",
        "|---|---:|---:|---|",
    ]
    for row in rows:
        errors = row.onset_errors
        onset = (
            f"{statistics.median(errors):+g}, {statistics.mean(map(abs, errors)):.1f}, "
            f"{len(errors)}"
            if errors
            else "–"
        )
        lines.append(f"| {row.label} | {row.n} | {_cell(row.detected, row.n)} | {onset} |")
    return "\n".join(lines)


def _token_index(tokenizer: object) -> Callable[[Sample, int], int]:
    """The index of the output token in which character `offset` of the text lies."""

    def index(sample: Sample, offset: int) -> int:
        decode = tokenizer.decode  # type: ignore[attr-defined]
        low, high = 0, len(sample.tokens)
        while low < high:  # the first k whose decoded prefix reaches past offset
            middle = (low + high) // 2
            if len(decode(sample.tokens[: middle + 1])) > offset:
                high = middle
            else:
                low = middle + 1
        return low

    return index


def main(argv: list[str] | None = None) -> None:
    """`python -m loopfix.scan.think_families MODEL RUN_DIR [RUN_DIR ...]`: the tables of the
    records of scans of the `think` suite (MODEL's tokenizer maps the judge's onsets to
    tokens)."""
    import sys
    from pathlib import Path

    from transformers import AutoTokenizer

    from loopfix.models import resolve_model_path
    from loopfix.records import read_samples

    model, *runs = sys.argv[1:] if argv is None else argv
    samples = {s.key: s for run in runs for s in read_samples(Path(run) / "records.jsonl")}
    kept = [s for s in samples.values() if s.finish_reason != "error"]
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(model))
    print(format_family_rows(family_rows(kept)))
    print()
    print(format_detect_rows(detect_rows(kept, _token_index(tokenizer))))


if __name__ == "__main__":
    main()

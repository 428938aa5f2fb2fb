"""The `tasks` suite's results per family: success (judged by the suite's own checker), loops,
cuts, and which loops cost an answer the model can give (`python -m loopfix.scan.task_families
RUN_DIR ...` prints the table of docs/suites-tasks.md)."""

from __future__ import annotations

from dataclasses import dataclass

from loopfix.records import Sample
from loopfix.scan.summary import is_loop
from loopfix.suites.tasks import FAMILIES, check_task, family_of, item_of, starts_with_answer
from loopfix.thinking import answer_part

__all__ = ["FamilyRow", "family_rows", "format_family_rows", "main"]


@dataclass(frozen=True)
class FamilyRow:
    """One family ("all": every family) at one temperature; see `family_rows`."""

    family: str
    temperature: float
    n: int
    success: int
    loop: int
    cut: int
    loops_solved_elsewhere: int
    loops_with_answer: int


def family_rows(samples: list[Sample]) -> list[FamilyRow]:
    """Per family and temperature (then "all" families): samples, successes (judged by this
    module's checker, not the record's stored verdict), loops, cuts;
    `loops_solved_elsewhere`: loops whose prompt is answered correctly by some other sample of
    `samples` (another temperature or sampling seed), i.e. loops that cost an answer the model
    can give; `loops_with_answer`: loops whose text begins with the whole correct list
    (`starts_with_answer`). `samples` are `loopfix.records.Sample`s of `tasks` items."""

    def correct(sample: Sample) -> bool:
        # Judged again by this checker: a record keeps the verdict of the one it was scanned with.
        meta = item_of(sample.prompt_id).meta
        return check_task(answer_part(sample.text), meta, sample.finish_reason == "stop")

    verdicts = {sample.key: correct(sample) for sample in samples}
    solved = {sample.prompt_id for sample in samples if verdicts[sample.key]}
    groups: dict[tuple[str, float], list[Sample]] = {}
    for sample in samples:
        if sample.finish_reason == "error":
            continue
        temperature = float(sample.settings["temperature"])
        for family in (family_of(sample.prompt_id), "all"):
            groups.setdefault((family, temperature), []).append(sample)
    order = {family: rank for rank, family in enumerate((*FAMILIES, "all"))}
    rows = []
    for (family, temperature), group in sorted(
        groups.items(), key=lambda g: (g[0][1], order[g[0][0]])
    ):
        loops = [sample for sample in group if is_loop(sample)]
        rows.append(
            FamilyRow(
                family=family,
                temperature=temperature,
                n=len(group),
                success=sum(verdicts[sample.key] for sample in group),
                loop=len(loops),
                cut=sum(sample.finish_reason == "length" for sample in group),
                loops_solved_elsewhere=sum(sample.prompt_id in solved for sample in loops),
                loops_with_answer=sum(
                    starts_with_answer(answer_part(sample.text), item_of(sample.prompt_id).meta)
                    for sample in loops
                ),
            )
        )
    return rows


def format_family_rows(rows: list[FamilyRow]) -> str:
    """A markdown table of `family_rows`: counts and percentages."""

    def cell(count: int, n: int) -> str:
        return f"{count} ({count / n:.0%})" if n else "–"

    lines = [
        "| T | family | n | success | loop | cut | loops solved elsewhere | loops with answer |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        n = row.n
        lines.append(
            f"| {row.temperature:g} | {row.family} | {n} | {cell(row.success, n)} | "
            f"{cell(row.loop, n)} | {cell(row.cut, n)} | "
            f"{row.loops_solved_elsewhere} of {row.loop} | "
            f"{row.loops_with_answer} of {row.loop} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """`python -m loopfix.scan.task_families RUN_DIR [RUN_DIR ...]`: the per-family table of the
    records of one or more scans of the `tasks` suite (runs of the same prompts at other
    temperatures or sampling seeds count for `loops solved elsewhere`)."""
    import sys
    from pathlib import Path

    from loopfix.records import read_samples

    runs = sys.argv[1:] if argv is None else argv
    # A sample held by two runs (the same seed and settings) counts once.
    samples = {s.key: s for run in runs for s in read_samples(Path(run) / "records.jsonl")}
    print(format_family_rows(family_rows(list(samples.values()))))


if __name__ == "__main__":
    main()

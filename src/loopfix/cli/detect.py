"""`loopfix detect` and `loopfix clean`: find loops in outputs, de-loop a dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from loopfix.detect import DetectConfig

console = Console()
errors = Console(stderr=True, soft_wrap=True)  # one line per error, greppable


def register(app: typer.Typer) -> None:
    app.command("detect")(detect_command)
    app.command("clean")(clean_command)


def _config(min_repeats: int | None, min_span: int | None, semantic: str) -> DetectConfig:
    from loopfix.detect import DetectConfig

    update: dict[str, object] = {"semantic": semantic}
    if min_repeats is not None:
        update["min_repeats"] = min_repeats
    if min_span is not None:
        update["min_span"] = min_span
    try:
        return DetectConfig(**update)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from error


SEMANTIC_HELP = "semantic tier: off, lexical, embedding (needs the semantic extra) or auto"


def detect_command(
    path: Annotated[str, typer.Argument(help=".txt or .jsonl file, or - for stdin")],
    field: Annotated[str, typer.Option(help="JSONL field holding the text")] = "text",
    json_out: Annotated[
        Path | None, typer.Option("--json", help="write one JSON object per input")
    ] = None,
    fail_on_loop: Annotated[bool, typer.Option(help="exit 1 if any input loops (for CI)")] = False,
    semantic: Annotated[str, typer.Option(help=SEMANTIC_HELP)] = "lexical",
    min_repeats: Annotated[
        int | None, typer.Option(help="copies of the unit a loop needs (default 3)")
    ] = None,
    min_span: Annotated[
        int | None, typer.Option(help="tokens a periodic loop must cover (default 64)")
    ] = None,
) -> None:
    """Find generation loops in model outputs and print id, looping, kind, onset, period, repeats.

    Example: loopfix detect outputs.jsonl --field text --json verdicts.jsonl --fail-on-loop
    """
    from loopfix.detect import detect_text
    from loopfix.detect.inputs import InputError, read_inputs

    config = _config(min_repeats, min_span, semantic)
    table = Table(title=f"loops in {path}")
    table.add_column("id", no_wrap=True)
    for column in ("looping", "kind", "onset", "period", "repeats"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    rows: list[dict[str, object]] = []
    bad = 0
    for item in read_inputs(path, field):
        if isinstance(item, InputError):
            bad += 1
            errors.print(f"[red]error[/red] {path}: {item}")
            continue
        verdict = detect_text(item.text, config=config)
        row = {"id": item.id, "looping": verdict.looping, "kind": verdict.kind}
        row.update(onset=verdict.onset, period=verdict.period, repeats=verdict.repeats)
        rows.append(row)
        table.add_row(*("" if value is None else str(value) for value in row.values()))
    console.print(table)
    looping = sum(bool(row["looping"]) for row in rows)
    console.print(f"{len(rows)} inputs, {looping} looping, {bad} unreadable lines")
    if json_out is not None:
        lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        json_out.write_text("".join(lines), encoding="utf-8")
    if fail_on_loop and looping:
        raise typer.Exit(1)


def clean_command(
    data: Annotated[Path, typer.Argument(help="JSONL dataset (one sample per line)")],
    out: Annotated[Path, typer.Option("--out", help="where to write the cleaned JSONL")],
    mode: Annotated[
        str, typer.Option(help="drop looping samples, or cut them after one copy of the unit")
    ] = "drop",
    field: Annotated[str, typer.Option(help="JSONL field holding the text")] = "text",
    semantic: Annotated[str, typer.Option(help=SEMANTIC_HELP)] = "lexical",
) -> None:
    """De-loop a distillation/SFT dataset: drop or cut looping samples, keep the rest unchanged.

    Example: loopfix clean teacher.jsonl --out teacher.clean.jsonl --mode cut
    """
    from loopfix.detect import detect_text
    from loopfix.detect.clean import CleanReport, clean_lines

    if mode not in ("drop", "cut"):
        raise typer.BadParameter("choose drop or cut", param_hint="--mode")
    config = _config(None, None, semantic)
    report = CleanReport()
    with data.open(encoding="utf-8") as source, out.open("w", encoding="utf-8") as sink:
        lines = (line.rstrip("\n") for line in source)
        detect = lambda text: detect_text(text, config=config)  # noqa: E731
        for line in clean_lines(lines, detect, mode, field, report):  # type: ignore[arg-type]
            sink.write(line + "\n")
    for error in report.errors:
        errors.print(f"[red]error[/red] {data}: {error}")
    table = Table(title=f"{data} -> {out}")
    table.add_column("outcome")
    table.add_column("count", justify="right")
    for label, count in (("kept", report.kept), ("cut", report.cut), ("dropped", report.dropped)):
        table.add_row(label, str(count))
    for kind, count in sorted(report.kinds.items()):
        table.add_row(f"loops: {kind}", str(count))
    table.add_row("unreadable lines", str(len(report.errors)))
    console.print(table)

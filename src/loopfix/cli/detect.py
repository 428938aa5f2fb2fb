"""`loopfix detect` and `loopfix clean`: find loops in outputs, de-loop a dataset.

Both read with one policy: every line that cannot be checked (not UTF-8, not JSON, no text) is
named on stderr by line; a run that checked nothing fails, and `--fail-on-loop` also fails when
any input went unchecked, since a gate must not pass what it did not see.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from loopfix.cli.common import OptionError, console, errors, fail, narrow_table
from loopfix.cli.options import flag

if TYPE_CHECKING:
    from loopfix.agents import Trajectory
    from loopfix.detect import DetectConfig, LoopVerdict
    from loopfix.detect.inputs import Decoding, InputError, TextInput


def register(app: typer.Typer) -> None:
    app.command("detect")(detect_command)
    app.command("clean")(clean_command)


def _check_range(name: str, value: int) -> None:
    """Refuse a count option outside the range its `DetectConfig` field allows, naming the
    option and the range, before any input is read (a huge value would otherwise overflow deep
    inside a tier)."""
    from loopfix.detect import DetectConfig

    bounds = DetectConfig.model_json_schema()["properties"][name]
    low, high = bounds["minimum"], bounds["maximum"]
    if not low <= value <= high:
        raise OptionError(f"{flag(name)}: must be from {low} to {high}, got {value}")


def _configs(semantic: str, **counts: int | None) -> Callable[[int | None], DetectConfig]:
    """The detector's settings for a text by its generation cap: a loopfix scan record's
    (`settings.max_new_tokens`) gets the scan's settings for that cap (`scan_detect_config`: a
    shorter periodic span and n-gram metric, which a short output could never reach otherwise),
    so that `detect` repeats the record's `loop.looping`; a text without a cap gets the defaults.
    `semantic` and each count option given (None: not given) apply to every text."""
    from loopfix.detect import DetectConfig
    from loopfix.scan.detection import scan_detect_config

    given = {name: value for name, value in counts.items() if value is not None}
    for name, value in given.items():
        _check_range(name, value)

    @functools.cache
    def config(cap: int | None) -> DetectConfig:
        scan = {} if cap is None else scan_detect_config(cap).model_dump(exclude_unset=True)
        return DetectConfig(**{**scan, "semantic": semantic, **given})  # type: ignore[arg-type]

    config(None)  # a bad --semantic is refused before any input is read
    return config


def _decoding(value: str) -> Decoding:
    if value not in ("strict", "replace"):
        raise OptionError(f"--errors: choose strict or replace, got {value!r}")
    return value  # type: ignore[return-value]


def _report_unreadable(source: object, unreadable: list[InputError]) -> None:
    for error in unreadable:
        errors.print(f"[red]error[/red] {escape(f'{source}: {error}')}", highlight=False)


VERDICT_COLUMNS = (
    ("id", "id"),
    ("line", "line"),
    ("loop", "looping"),
    ("kind", "kind"),
    ("onset", "onset"),
    ("per", "period"),
    ("reps", "repeats"),
    ("by", "decided_by"),
    ("score", "score"),
)
"""(header, full name) of the verdict table, short enough for 80 columns; the full names are
the keys of each `--json` row."""
PROBE_COLUMN = ("probe", "probe")
"""The hidden-state probe's probability, with `--states`."""
SEMANTIC_HELP = "semantic tier: off, lexical, embedding (needs the semantic extra) or auto"
ERRORS_HELP = "bytes that are not UTF-8: strict (report the line) or replace (decode as U+FFFD)"
STATES_HELP = (
    "also run the hidden-state probe (SmolLM2's states, docs/states.md) on each text: a text the "
    "text tiers call clean loops (by 'states') when the probe fires; its probability is the "
    "'probe' column. Off by default: on the held-out corpus, detector OR probe keeps precision "
    "0.915 (< 0.95) for recall 0.825 and 19/40 semantic loops"
)


def detect_command(
    path: Annotated[str, typer.Argument(help=".txt or .jsonl file, or - for stdin")],
    field: Annotated[str, typer.Option(help="JSONL field holding the text")] = "text",
    json_out: Annotated[
        Path | None,
        typer.Option("--json", metavar="OUT", help="also write one JSON object per input to OUT"),
    ] = None,
    fail_on_loop: Annotated[
        bool, typer.Option(help="exit 1 if any input loops, 2 if any could not be checked (CI)")
    ] = False,
    semantic: Annotated[str, typer.Option(help=SEMANTIC_HELP)] = "lexical",
    min_repeats: Annotated[
        int | None, typer.Option(help="copies of the unit a loop needs (default 3)")
    ] = None,
    min_span: Annotated[
        int | None, typer.Option(help="tokens a periodic loop must cover (default 64)")
    ] = None,
    decoding: Annotated[str, typer.Option("--errors", help=ERRORS_HELP)] = "strict",
    states: Annotated[bool, typer.Option("--states", help=STATES_HELP)] = False,
) -> None:
    """Find generation loops in model outputs and print id, line, looping, kind, onset, period,
    repeats, the deciding evidence and its score. An agent trajectory (.json, .traj or .jsonl of
    OpenAI chat messages with tool calls, or a SWE-agent .traj) gets the stuck-agent verdict
    instead: kind, onset turn, repeats and the repeating calls (docs/agents.md). A JSONL row's
    id is the record's `id` or `prompt_id` (else its line number), followed by the field for an
    OpenAI choice; line is its line in the file. An OpenAI choice or record with finish_reason
    "length" counts as cut at the token limit.

    Example: loopfix detect outputs.jsonl --field text --json verdicts.jsonl --fail-on-loop
    """
    from loopfix.atomic import check_output_path, write_text_atomic
    from loopfix.detect import detect_text
    from loopfix.detect.inputs import EmptyInputError, InputError, read_inputs

    configs = _configs(semantic, min_repeats=min_repeats, min_span=min_span)
    policy = _decoding(decoding)
    if json_out is not None:
        check_output_path(json_out, *([] if path == "-" else [path]))
    if path != "-":
        from loopfix.agents import sniff

        trajectories = sniff(Path(path))
        if trajectories is not None:
            _detect_trajectories(path, trajectories, json_out, fail_on_loop)
            return
    rows: list[dict[str, object]] = []
    looping_cut: int | None = None  # None: no input says whether it was cut
    try:
        # detect/ imports nothing else of ours, so its errors become one line here
        items = list(read_inputs(path, field, policy))
    except EmptyInputError as error:
        raise OptionError(str(error)) from None
    checked = [item for item in items if not isinstance(item, InputError)]
    unreadable = [item for item in items if isinstance(item, InputError)]
    verdicts = [detect_text(item.text, config=configs(item.cap), cut=item.cut) for item in checked]
    probabilities: list[float | None] | None = None
    if states:
        verdicts, probabilities = _with_states(checked, verdicts)
    for index, (item, verdict) in enumerate(zip(checked, verdicts, strict=True)):
        if item.cut is not None:
            looping_cut = (looping_cut or 0) + (verdict.looping and item.cut)
        row: dict[str, object] = {
            "id": item.id,
            "line": item.line,
            "looping": verdict.looping,
            "kind": verdict.kind,
        }
        row.update(onset=verdict.onset, period=verdict.period, repeats=verdict.repeats)
        row.update(decided_by=verdict.decided_by, score=verdict.score)
        if probabilities is not None:
            row["probe"] = probabilities[index]
        rows.append(row)
    _report_unreadable(path, unreadable)
    if not rows:
        fail(f"{path}: nothing checked ({len(unreadable)} unreadable lines, listed above)")
    cells = [["" if value is None else str(value) for value in row.values()] for row in rows]
    columns = (*VERDICT_COLUMNS, PROBE_COLUMN) if states else VERDICT_COLUMNS
    console.print(narrow_table(f"loops in {path}", columns, cells))
    looping = sum(bool(row["looping"]) for row in rows)
    # A scan's loops are the looping outputs cut at the cap: said where the records tell cuts.
    cut = "" if looping_cut is None else f" ({looping_cut} cut at the token limit while looping)"
    console.print(f"{len(rows)} inputs, {looping} looping{cut}, {len(unreadable)} unreadable lines")
    if json_out is not None:
        lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        write_text_atomic(json_out, "".join(lines))
    if fail_on_loop and unreadable:
        fail(f"--fail-on-loop: {len(unreadable)} lines of {path} could not be checked")
    if fail_on_loop and looping:
        raise typer.Exit(1)


AGENT_COLUMNS = (
    ("id", "id"),
    ("line", "line"),
    ("stuck", "stuck"),
    ("kind", "kind"),
    ("onset turn", "onset_turn"),
    ("reps", "repeats"),
)
"""(header, full name) of the stuck-agent table; the full names are the keys of each `--json`
row, with the trajectory's `format`, its `steps`, `ongoing` (stuck at its last step) and `unit`
(the repeating calls, also printed under the table)."""


def _detect_trajectories(
    path: str, trajectories: list[Trajectory], json_out: Path | None, fail_on_loop: bool
) -> None:
    from loopfix.agents import detect_stuck
    from loopfix.atomic import write_text_atomic

    rows: list[dict[str, object]] = []
    for trajectory in trajectories:
        verdict = detect_stuck(trajectory.steps).to_dict()
        row: dict[str, object] = {"id": trajectory.id, "line": trajectory.line}
        row.update(format=trajectory.format, steps=len(trajectory.steps), **verdict)
        rows.append(row)
    cells = [
        ["" if row[key] is None else str(row[key]) for _, key in AGENT_COLUMNS] for row in rows
    ]
    console.print(narrow_table(f"stuck agents in {path}", AGENT_COLUMNS, cells))
    for row in rows:
        for step in row["unit"]:  # type: ignore[attr-defined]
            console.print(f"{escape(str(row['id']))} repeats: {escape(step)}", highlight=False)
    stuck = sum(bool(row["stuck"]) for row in rows)
    console.print(f"{len(rows)} trajectories, {stuck} stuck")
    if json_out is not None:
        write_text_atomic(json_out, "".join(json.dumps(row) + "\n" for row in rows))
    if fail_on_loop and stuck:
        raise typer.Exit(1)


def _with_states(
    checked: list[TextInput], verdicts: list[LoopVerdict]
) -> tuple[list[LoopVerdict], list[float | None]]:
    """`--states`: each verdict combined with the shipped probe ("detector OR probe"), and the
    probe's probability for each text."""
    from loopfix.states import combined_verdict, load_probe, probe_probabilities

    probe = load_probe()
    probabilities = probe_probabilities(probe, [item.text for item in checked])
    combined = [
        combined_verdict(verdict, probability, probe)
        for verdict, probability in zip(verdicts, probabilities, strict=True)
    ]
    return combined, [None if p is None else round(p, 4) for p in probabilities]


def clean_command(
    data: Annotated[Path, typer.Argument(help="JSONL dataset (one sample per line)")],
    out: Annotated[Path, typer.Option("--out", help="where to write the cleaned JSONL")],
    mode: Annotated[
        str, typer.Option(help="drop looping samples, or cut them after one copy of the unit")
    ] = "drop",
    field: Annotated[str, typer.Option(help="JSONL field holding the text")] = "text",
    semantic: Annotated[str, typer.Option(help=SEMANTIC_HELP)] = "lexical",
    decoding: Annotated[str, typer.Option("--errors", help=ERRORS_HELP)] = "strict",
) -> None:
    """De-loop a distillation/SFT dataset: drop or cut looping samples, keep the rest unchanged.

    OUT appears only when complete. Lines that cannot be checked are not written; each is named
    on stderr. Nothing checked at all is an error (exit 2) and writes nothing.

    Example: loopfix clean teacher.jsonl --out teacher.clean.jsonl --mode cut
    """
    from loopfix.atomic import atomic_writer, check_output_path
    from loopfix.detect import detect_text
    from loopfix.detect.clean import CleanReport, clean_lines
    from loopfix.detect.inputs import decode_lines

    if mode not in ("drop", "cut"):
        raise OptionError(f"--mode: choose drop or cut, got {mode!r}")
    config = _configs(semantic)(None)
    policy = _decoding(decoding)
    check_output_path(out, data)
    report = CleanReport()
    with data.open("rb") as source, atomic_writer(out) as sink:
        detect = lambda text: detect_text(text, config=config)  # noqa: E731
        lines = decode_lines(source, policy)
        for line in clean_lines(lines, detect, mode, field, report):  # type: ignore[arg-type]
            sink.write(line + "\n")
        _report_unreadable(data, report.errors)
        if not report.checked:
            # Raised inside the writer: the empty output is discarded, not left looking done.
            fail(f"{data}: nothing checked ({len(report.errors)} unreadable lines); wrote nothing")
    table = Table(title=f"{data} -> {out}")
    table.add_column("outcome")
    table.add_column("count", justify="right")
    for label, count in (("kept", report.kept), ("cut", report.cut), ("dropped", report.dropped)):
        table.add_row(label, str(count))
    for kind, count in sorted(report.kinds.items()):
        table.add_row(f"loops: {kind}", str(count))
    table.add_row("unreadable lines (not written)", str(len(report.errors)))
    console.print(table)

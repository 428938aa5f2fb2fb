"""What every verb module shares: the consoles, the progress bar, list-of-numbers options, and
the one-line errors."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as ProgressBars
from rich.table import Table

from loopfix.errors import LoopfixError, one_line
from loopfix.progress import Progress, ProgressFactory, line_progress

try:  # newer typer carries its own copy of click, whose exceptions are not click's classes
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - older typer raises click's own
    from click.exceptions import UsageError  # type: ignore[assignment]

if TYPE_CHECKING:
    from pydantic import ValidationError

console = Console()
errors = Console(stderr=True, soft_wrap=True)  # one line per error, whatever the terminal width

TRUST_REMOTE_CODE = typer.Option(
    False,
    "--trust-remote-code",
    help="run the Python code a hub model ships with (off: only transformers' own classes)",
)
INPUT_ERROR_EXIT = 2
"""Exit status of a run refused for its input or options (1 is kept for "loops found")."""


class OptionError(LoopfixError):
    """An option value that cannot be used; the message names the option."""


def fail(message: str, code: int = INPUT_ERROR_EXIT) -> NoReturn:
    """Print `error: message` as one line on stderr and exit."""
    errors.print(f"[red]error:[/red] {escape(one_line(message))}")
    raise typer.Exit(code)


def option_name(location: tuple[Any, ...]) -> str:
    """A pydantic error location as the CLI spells it: ("temperatures", 0) -> --temperatures."""
    names = [str(part) for part in location if isinstance(part, str)]
    return "--" + names[-1].replace("_", "-") if names else "settings"


def validation_message(error: ValidationError) -> str:
    """A pydantic ValidationError as one line naming each option and what it expects."""
    return "; ".join(
        f"{option_name(tuple(problem['loc']))}: {problem['msg']}"
        + (f" (got {problem['input']!r})" if "input" in problem and problem["loc"] else "")
        for problem in error.errors()
    )


def usage_message(error: UsageError) -> str:
    """A click usage error (unknown option, missing argument, bad choice) as one line that says
    where the help is, instead of typer's boxed block of five to eleven lines."""
    command = error.ctx.command_path if error.ctx is not None else "loopfix"
    return f"{error.format_message().rstrip('.')}; see '{command} --help'"


class LoopfixGroup(typer.core.TyperGroup):
    """The root command: turns the errors a user can fix into one line and exit status 2."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except UsageError as error:
            fail(usage_message(error))

    def invoke(self, ctx: Any) -> Any:
        from pydantic import ValidationError

        try:
            return super().invoke(ctx)
        except UsageError as error:
            fail(usage_message(error))
        except ValidationError as error:
            fail(validation_message(error))
        except LoopfixError as error:
            fail(str(error))
        except UnicodeDecodeError as error:
            fail(f"not UTF-8 at byte offset {error.start}: {error.reason}")
        except OSError as error:
            fail(f"{error.filename or ''}: {error.strerror or error}".lstrip(": "))


def examples(*commands: str) -> str:
    """An "Examples:" block for a command's help: one paragraph per command, after the one-line
    description that `loopfix --help` lists."""
    return "\n\n".join(["", "Examples:", *commands])


def narrow_table(
    title: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]]
) -> Table:
    """A table that fits an 80-column terminal: short headers, light borders, and a caption
    that spells out every header it shortened. `columns`: (short header, full name)."""
    legend = ", ".join(f"{short} = {full}" for short, full in columns if short != full)
    table = Table(
        title=title,
        caption=legend or None,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        # columns apart by the rule's one space, not that plus two of padding: the guard table's
        # eleven columns of real values ("phase-temp+rescue", n = 1000, "100.0%") fit 80 columns
        # only this way
        padding=(0, 0),
        caption_justify="left",
    )
    for short, _ in columns:
        table.add_column(short, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def progress_bar() -> ProgressBars:
    return ProgressBars(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


@contextmanager
def work_progress() -> Iterator[ProgressFactory]:
    """Progress of the work a verb starts, one `Progress` per label: a bar each on a terminal,
    elsewhere (a log, a pipe, CI) plain lines (`line_progress`), so long work is never silent."""
    if not console.is_terminal:
        yield lambda label: line_progress(
            label, lambda line: console.print(line, markup=False, soft_wrap=True)
        )
        return
    with progress_bar() as bars:

        def for_label(label: str) -> Progress:
            task = bars.add_task(label, total=None)

            def on_progress(advance: int, total: int | None) -> None:
                if total is not None:
                    bars.update(task, total=total)
                bars.advance(task, advance)

            return on_progress

        yield for_label


def parse_list(text: str) -> list[str]:
    """ "a, b,c" -> ["a", "b", "c"] (empty parts dropped; the caller judges an empty list)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_floats(text: str, option: str) -> list[float]:
    try:
        return [float(part) for part in parse_list(text)]
    except ValueError:
        raise OptionError(f"{option}: expected comma-separated numbers, got {text!r}") from None


def parse_temperatures(text: str, option: str = "--temperatures") -> list[float]:
    """Comma-separated temperatures, each finite and at least 0, checked before any loading."""
    from pydantic import TypeAdapter, ValidationError

    from loopfix.records import Temperature

    values = parse_floats(text, option)
    if not values:
        raise OptionError(f"{option}: give at least one temperature")
    try:
        return TypeAdapter(list[Temperature]).validate_python(values)
    except ValidationError as error:
        raise OptionError(f"{option}: {error.errors()[0]['msg']}, got {text!r}") from None


def at_least(minimum: int, **options: int) -> None:
    """Refuse any option (given by keyword, `batch_size=...`) whose value is below `minimum`."""
    for name, value in options.items():
        if value < minimum:
            raise OptionError(
                f"--{name.replace('_', '-')}: must be at least {minimum}, got {value}"
            )


def parse_ints(text: str, option: str) -> list[int]:
    """Comma-separated whole numbers; `1.5` is refused, not rounded."""
    try:
        return [int(part) for part in parse_list(text)]
    except ValueError:
        raise OptionError(
            f"{option}: expected comma-separated whole numbers, got {text!r}"
        ) from None

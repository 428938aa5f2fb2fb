"""What every verb module shares: the console, the progress bar, list-of-numbers options."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console()


def examples(*commands: str) -> str:
    """An "Examples:" block for a command's help: one paragraph per command, after the one-line
    description that `loopfix --help` lists."""
    return "\n\n".join(["", "Examples:", *commands])


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


def parse_floats(text: str, option: str) -> list[float]:
    try:
        return [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise typer.BadParameter(
            f"expected comma-separated numbers, got {text!r}", param_hint=option
        ) from None

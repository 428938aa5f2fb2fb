"""The `loopfix` command line: one thin command per verb; the work lives in the packages."""

from __future__ import annotations

import typer

from loopfix.cli import (
    compare,
    consistency,
    detect,
    doctor,
    lab,
    models,
    patch,
    repair,
    scan,
    serve,
    warn,
)
from loopfix.cli.common import LoopfixGroup

app = typer.Typer(
    name="loopfix",
    cls=LoopfixGroup,
    help="Measure, explain and fix generation loops in language models.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    add_completion=False,
)
for _module in (
    compare,
    consistency,
    detect,
    doctor,
    lab,
    models,
    patch,
    repair,
    scan,
    serve,
    warn,
):
    _module.register(app)


def main() -> None:
    app()

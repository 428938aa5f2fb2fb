"""The `loopfix` command line: one thin command per verb; the work lives in the packages."""

from __future__ import annotations

from importlib import import_module

import typer

from loopfix.cli.common import LoopfixGroup

VERB_MODULES = (
    "compare",
    "consistency",
    "detect",
    "doctor",
    "lab",
    "models",
    "patch",
    "repair",
    "scan",
    "serve",
    "warn",
)
"""The modules of `loopfix.cli` that register commands (each has `register(app)`)."""

app = typer.Typer(
    name="loopfix",
    cls=LoopfixGroup,
    help="Measure, explain and fix generation loops in language models.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    add_completion=False,
)
for _name in VERB_MODULES:
    import_module(f"loopfix.cli.{_name}").register(app)


def main() -> None:
    app()

"""`loopfix models list|path`: the bundled model names, and the folder a MODEL argument loads.
Plain tab-separated lines (no terminal styling), for scripts: `vllm serve $(loopfix models path
loopfix:smollm2)`."""

from __future__ import annotations

import typer

from loopfix.cli.common import examples

models_app = typer.Typer(
    help="The bundled models, and the Hugging Face folder any MODEL argument loads.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models", help="List bundled models; print a model's folder.")


@models_app.command(
    "list",
    help="Every loopfix:NAME, with its folder or file (or how to install it), one per line "
    "(name, kind, where; tab-separated)." + examples("loopfix models list"),
)
def list_command() -> None:
    from loopfix.models.delta import DERIVED_MODELS
    from loopfix.models.errors import ModelLoadError
    from loopfix.models.loading import (
        TESTBED_PREFIX,
        bundled_checkpoints,
        bundled_testbeds,
        testbed_dir,
    )
    from loopfix.models.packaged import PACKAGED_MODELS, packaged_model_path

    for name in bundled_testbeds():
        typer.echo(f"{TESTBED_PREFIX}{name}\ttestbed\t{testbed_dir() / name}")
    for name in PACKAGED_MODELS:
        try:
            where = str(packaged_model_path(name))  # a file in pieces is joined on first use
        except ModelLoadError as error:
            where = f"unavailable: {error}"
        typer.echo(f"{TESTBED_PREFIX}{name}\tgguf\t{where}")
    for name, entry in DERIVED_MODELS.items():
        # A base model plus a shipped delta, merged into the cache on first load.
        delta = bundled_checkpoints() / entry.folder
        typer.echo(f"{TESTBED_PREFIX}{name}\tdelta\t{delta} on {TESTBED_PREFIX}{entry.base}")


@models_app.command(
    "path",
    help="Print the Hugging Face folder MODEL loads from (a GGUF file or packaged model is "
    "converted into the loopfix cache first), e.g. to start vLLM on it."
    + examples(
        "loopfix models path loopfix:smollm2",
        "vllm serve $(loopfix models path loopfix:smollm2)",
    ),
)
def path_command(
    model: str = typer.Argument(..., help="folder, .gguf file or loopfix:NAME"),
) -> None:
    from pathlib import Path

    from loopfix.models.errors import ModelLoadError
    from loopfix.models.loading import resolve_model_path

    folder = resolve_model_path(model)
    if not Path(folder).is_dir():
        raise ModelLoadError(f"{model!r} is not a local model: a hub id has no folder until loaded")
    typer.echo(folder)

"""`loopfix patch inspect|apply|revert`: weight patches as files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from loopfix.cli.common import TRUST_REMOTE_CODE, console
from loopfix.cli.options import build, option
from loopfix.patch.gguf_config import GgufExportConfig

patch_app = typer.Typer(
    help="Inspect, apply and revert loopfix weight patches (patch.json + patch.safetensors).",
    no_args_is_help=True,
)

PatchArgument = Annotated[Path, typer.Argument(help="patch.json, or the folder holding it")]


def register(app: typer.Typer) -> None:
    app.add_typer(patch_app, name="patch", help="Inspect, apply or revert a weight patch.")


@patch_app.command("inspect")
def inspect_command(
    patch: PatchArgument,
    as_json: Annotated[bool, typer.Option("--json", help="print the manifest as JSON")] = False,
) -> None:
    """Show what a patch touches: tensors, layers, columns, alpha, hashes and metrics.

    Example: loopfix patch inspect repair/stargraph
    """
    from loopfix.patch import load_patch

    loaded = load_patch(patch)  # checks every stored tensor against its checksum
    manifest = loaded.manifest()
    if as_json:
        console.print_json(json.dumps(manifest))
        return
    table = Table(title=f"patch for {loaded.base_model.id}")
    table.add_column("tensor", overflow="fold")
    for column in ("layer", "site", "columns", "alpha", "sha256 before", "sha256 after"):
        table.add_column(column)
    for edit in loaded.edits:
        table.add_row(
            edit.name,
            str(edit.layer),
            edit.site,
            str(len(edit.columns)),
            f"{edit.alpha:g}",
            edit.sha256_before[:12],
            edit.sha256_after[:12],
        )
    console.print(table)
    console.print(
        f"touched {loaded.touched_parameters} of {loaded.total_parameters} weights "
        f"({loaded.touched_fraction:.4%})"
    )
    if loaded.metrics:
        console.print_json(json.dumps(loaded.metrics))


def _check_out(out: Path, model: str, patch: Path, folder: bool) -> None:
    """Refuse, before anything loads, an OUT that is or lies inside the model or the patch, or
    that holds anything already (an export only ever writes new files)."""
    from loopfix.atomic import check_new_output
    from loopfix.patch.format import resolve_patch_path

    check_new_output(out, model, resolve_patch_path(patch).parent, folder=folder)


def _run(model: str, patch: Path, out: Path, revert: bool, trust_remote_code: bool) -> None:
    from loopfix.patch import export_patched, export_reverted, load_patch

    _check_out(out, model, patch, folder=True)
    loaded = load_patch(patch)
    export = export_reverted if revert else export_patched
    written = export(model, loaded, out, trust_remote_code=trust_remote_code)
    console.print(f"wrote {written}")


def _export_gguf(model: str, patch: Path, out: Path, gguf_type: str) -> None:
    from loopfix.atomic import OutputError
    from loopfix.models.loading import gguf_source
    from loopfix.patch import load_patch
    from loopfix.patch.gguf_export import card_path, export_patched_gguf

    _check_out(out, model, patch, folder=False)
    source = gguf_source(model)
    if source is None:
        raise OutputError(
            f"--out {out} is a .gguf file, which only a .gguf model can be written as; "
            f"{model} is not one (write a folder instead)"
        )
    config = build(GgufExportConfig, {"gguf_type": gguf_type})
    report = export_patched_gguf(source, load_patch(patch), out, config)
    for row in report:
        console.print(row.describe())
    console.print(f"wrote {out} and its model card {card_path(out)}")


@patch_app.command("apply")
def apply_command(
    model: Annotated[str, typer.Argument(help="model folder, .gguf file, hub id or loopfix:NAME")],
    patch: PatchArgument,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="folder for the patched HF model, or a new .gguf file (for a GGUF model)",
        ),
    ],
    gguf_type: str = option(GgufExportConfig, "gguf_type"),
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Write MODEL with PATCH applied as a full HF model folder, or, for a GGUF model and an
    OUT ending in .gguf, as a GGUF file llama.cpp and Ollama load (refused on hash mismatch).

    Example: loopfix patch apply loopfix:stargraph repair/stargraph --out stargraph-patched
    """
    if out.suffix.lower() == ".gguf":
        _export_gguf(model, patch, out, gguf_type)
    else:
        _run(model, patch, out, revert=False, trust_remote_code=trust_remote_code)


@patch_app.command("revert")
def revert_command(
    model: Annotated[str, typer.Argument(help="a patched model folder")],
    patch: PatchArgument,
    out: Annotated[Path, typer.Option("--out", help="folder for the restored HF model")],
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Write a patched folder with PATCH undone: the original tensors, bit for bit.

    Example: loopfix patch revert stargraph-patched repair/stargraph --out stargraph-original
    """
    if out.suffix.lower() == ".gguf":
        from loopfix.atomic import OutputError

        raise OutputError(
            f"--out {out}: revert writes an HF folder, not a GGUF file; for a GGUF keep the "
            "original file (re-quantized blocks need not decode to the original values)"
        )
    _run(model, patch, out, revert=True, trust_remote_code=trust_remote_code)

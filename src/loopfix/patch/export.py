"""Patched model folders: apply a patch to a saved model and write a full HF folder, or revert.

Steps of `export_patched` (and `export_reverted`, with the direction swapped):
1. Load the model in its checkpoint dtype (a dtype change would break the hashes).
2. Apply (or revert) in memory with the hash checks of `apply_patch`.
3. `save_pretrained` (safetensors) into a temporary folder beside OUT, copy the tokenizer and
   other side files, and write a model card; a patched folder also keeps a copy of the patch
   under `loopfix_patch/`. The folder is renamed to OUT only when complete, and only onto a
   path that does not exist or is an empty folder: an export never deletes a file it did not
   write, and OUT may not be (or lie inside) the model's folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from transformers import AutoModelForCausalLM
from transformers.utils import SAFE_WEIGHTS_NAME

from loopfix.atomic import atomic_folder, check_new_output, writing
from loopfix.models import resolve_model_path
from loopfix.patch.apply import apply_patch, revert_patch
from loopfix.patch.format import Patch, save_patch

__all__ = ["PATCH_COPY_DIR", "export_patched", "export_reverted", "model_card"]

PATCH_COPY_DIR = "loopfix_patch"
# Files save_pretrained writes itself, and weights that must not be carried over stale.
_REGENERATED = ("config.json", "generation_config.json", "README.md")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".index.json")


def _copy_side_files(source: Path, out: Path) -> None:
    if not source.is_dir():
        return  # a hub id: the tokenizer comes from the hub cache below
    for path in source.iterdir():
        if (
            path.is_file()
            and path.name not in _REGENERATED
            and not path.name.endswith(_WEIGHT_SUFFIXES)
        ):
            # Content only: a copy made with the source's mode could be the owner's only.
            shutil.copyfile(path, out / path.name)


def _save(model_spec: str, patch: Patch, out: Path, revert: bool, trust_remote_code: bool) -> Path:
    source = resolve_model_path(model_spec)
    out = Path(out)
    check_new_output(out, model_spec, source, folder=True)
    model = AutoModelForCausalLM.from_pretrained(
        source, dtype="auto", trust_remote_code=trust_remote_code
    )
    if revert:
        revert_patch(model, patch)
    else:
        apply_patch(model, patch)
    with atomic_folder(out, replace=False) as work:
        _copy_side_files(Path(source), work)
        if not (work / "tokenizer_config.json").is_file():
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
            tokenizer.save_pretrained(work)
        # save_pretrained's errors name no file; it writes one model.safetensors up to 50 GB (a
        # bigger model's shards are blamed under that name).
        with writing(work / SAFE_WEIGHTS_NAME):
            model.save_pretrained(work, safe_serialization=True)
        if not revert:
            save_patch(patch, work / PATCH_COPY_DIR)
        (work / "README.md").write_text(model_card(patch, model_spec, reverted=revert))
    return out


def export_patched(
    model_spec: str, patch: Patch, out: Path, trust_remote_code: bool = False
) -> Path:
    """Write MODEL with PATCH applied as a full HF folder (loadable by `from_pretrained`)."""
    return _save(model_spec, patch, out, revert=False, trust_remote_code=trust_remote_code)


def export_reverted(
    patched_spec: str, patch: Patch, out: Path, trust_remote_code: bool = False
) -> Path:
    """Write a patched folder with PATCH reverted: the original tensors, bit for bit."""
    return _save(patched_spec, patch, out, revert=True, trust_remote_code=trust_remote_code)


def model_card(patch: Patch, model_spec: str, reverted: bool = False) -> str:
    base = patch.base_model
    sites = ", ".join(
        f"{edit.name} ({len(edit.columns)} columns, alpha {edit.alpha:g})" for edit in patch.edits
    )
    state = "with the loopfix patch reverted (original weights)" if reverted else "patched"
    lines = [
        "---",
        f"base_model: {base.id}",
        "tags: [loopfix, weight-patch]",
        "---",
        f"# {base.id} ({state})",
        "",
        f"Written by `loopfix patch {'revert' if reverted else 'apply'}` from `{model_spec}`.",
        f"Edited tensors: {sites}.",
        f"Touched weights: {patch.touched_parameters} of {patch.total_parameters} "
        f"({patch.touched_fraction:.4%}).",
        "",
        "The edit is W <- W - alpha * u (m * (u^T W)) on the listed columns; "
        f"`{PATCH_COPY_DIR}/patch.json` holds the hashes, and `loopfix patch revert` restores "
        "the original tensors bit for bit.",
        "",
        "## Metrics",
        "```json",
        json.dumps(patch.metrics, indent=1),
        "```",
        "",
    ]
    return "\n".join(lines)

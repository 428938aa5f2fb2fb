"""The Patch: column edits as data, stored as `patch.safetensors` + a `patch.json` manifest.

Each edit keeps the direction, the column indices and both the original and the edited column
slices, so applying writes stored bits (no recomputation that could round differently) and
reverting restores the original bits exactly. The manifest records, per touched tensor, its
name, shape, dtype and the SHA-256 of the whole tensor before and after, and, per stored slot
(direction, columns, before, after), the SHA-256 of the slot itself: a patch checks its own
files when loaded, so damage is blamed on the patch, never on the model. No pickle: tensors go
through safetensors, everything else is JSON.

Format 1 stored no slot checksums; such patches are refused with a request to re-create them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save

from loopfix.atomic import atomic_writer, write_json_atomic
from loopfix.errors import LoopfixError
from loopfix.models.architectures import Orientation
from loopfix.patch.hashing import tensor_sha256

__all__ = [
    "MANIFEST_NAME",
    "PATCH_FORMAT",
    "TENSORS_NAME",
    "ColumnEdit",
    "Patch",
    "PatchFormatError",
    "load_patch",
    "resolve_patch_path",
    "save_patch",
]

PATCH_FORMAT = "loopfix.patch/2"
MANIFEST_NAME = "patch.json"
TENSORS_NAME = "patch.safetensors"
_SLOTS = ("direction", "columns", "before", "after")


class PatchFormatError(LoopfixError, ValueError):
    """A patch file is missing, malformed, damaged, or its tensors do not match its manifest."""


@dataclass(frozen=True)
class ColumnEdit:
    """One edited weight: W[:, columns] <- after (the original columns are kept in `before`).

    `before`/`after` are [width, k] slices of the write matrix (the orientation-free view).
    """

    name: str
    layer: int
    site: str
    orientation: Orientation
    shape: tuple[int, ...]
    dtype: str
    alpha: float
    sha256_before: str
    sha256_after: str
    direction: torch.Tensor
    columns: torch.Tensor
    before: torch.Tensor
    after: torch.Tensor

    def manifest(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layer": self.layer,
            "site": self.site,
            "orientation": self.orientation,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "alpha": self.alpha,
            "columns": self.columns.tolist(),
            "sha256_before": self.sha256_before,
            "sha256_after": self.sha256_after,
        }


@dataclass(frozen=True)
class Patch:
    base_model: dict[str, Any]
    """id, revision (None for a local folder), model_type, family."""
    edits: tuple[ColumnEdit, ...]
    touched_parameters: int
    total_parameters: int
    metrics: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    """How the direction was found (method, layers, seeds) and the software versions."""

    @property
    def touched_fraction(self) -> float:
        return self.touched_parameters / self.total_parameters

    def manifest(self) -> dict[str, Any]:
        return {
            "format": PATCH_FORMAT,
            "base_model": self.base_model,
            "edits": [
                {
                    **edit.manifest(),
                    "tensors": {
                        slot: {
                            "name": _slot_name(index, slot),
                            "sha256": tensor_sha256(getattr(edit, slot)),
                        }
                        for slot in _SLOTS
                    },
                }
                for index, edit in enumerate(self.edits)
            ],
            "layers": sorted({edit.layer for edit in self.edits}),
            "touched_parameters": self.touched_parameters,
            "total_parameters": self.total_parameters,
            "touched_fraction": self.touched_fraction,
            "metrics": self.metrics,
            "provenance": self.provenance,
        }

    def with_metrics(self, metrics: dict[str, Any]) -> Patch:
        return Patch(
            self.base_model,
            self.edits,
            self.touched_parameters,
            self.total_parameters,
            {**self.metrics, **metrics},
            self.provenance,
        )


def _slot_name(index: int, slot: str) -> str:
    return f"edit{index}.{slot}"


def resolve_patch_path(path: Path) -> Path:
    """PATCH is the `patch.json` path or the folder holding it; returns the manifest path."""
    path = Path(path)
    manifest = path / MANIFEST_NAME if path.is_dir() else path
    if not manifest.is_file():
        raise PatchFormatError(f"no patch manifest at {manifest}")
    if not (manifest.parent / TENSORS_NAME).is_file():
        raise PatchFormatError(f"{manifest} has no {TENSORS_NAME} beside it")
    return manifest


def save_patch(patch: Patch, folder: Path) -> Path:
    """Write `folder/patch.safetensors` and `folder/patch.json` (each atomically, the manifest
    last, so a manifest never describes tensors that are not there); returns its path."""
    folder = Path(folder)
    tensors = {
        _slot_name(index, slot): getattr(edit, slot).detach().cpu().contiguous()
        for index, edit in enumerate(patch.edits)
        for slot in _SLOTS
    }
    with atomic_writer(folder / TENSORS_NAME, binary=True) as handle:
        handle.write(save(tensors, metadata={"format": PATCH_FORMAT}))
    manifest = folder / MANIFEST_NAME
    write_json_atomic(manifest, patch.manifest())
    return manifest


_REQUIRED = ("base_model", "edits", "touched_parameters", "total_parameters")
_REQUIRED_IN_EDIT = (
    *("name", "layer", "site", "orientation", "shape", "dtype", "alpha"),
    *("columns", "sha256_before", "sha256_after", "tensors"),
)


def _require(data: Any, keys: tuple[str, ...], where: str) -> None:
    if not isinstance(data, dict):
        raise PatchFormatError(f"{where} is not a JSON object")
    missing = [key for key in keys if key not in data]
    if missing:
        raise PatchFormatError(f"{where} lacks {', '.join(map(repr, missing))}")


def load_patch(path: Path) -> Patch:
    """Read and check a patch: its manifest's fields, and every stored tensor's checksum."""
    manifest_path = resolve_patch_path(path)
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PatchFormatError(f"{manifest_path} is not JSON: {error}") from error
    _require(manifest, ("format",), str(manifest_path))
    if manifest["format"] != PATCH_FORMAT:
        raise PatchFormatError(
            f"{manifest_path} has format {manifest['format']!r}, expected {PATCH_FORMAT!r}"
            + (
                " (format 1 kept no checksums of its stored tensors: re-create the patch with "
                "`loopfix repair`)"
                if manifest["format"] == "loopfix.patch/1"
                else ""
            )
        )
    _require(manifest, _REQUIRED, str(manifest_path))
    tensors_path = manifest_path.parent / TENSORS_NAME
    try:
        tensors = load_file(str(tensors_path))
    except (SafetensorError, OSError) as error:
        raise PatchFormatError(
            f"{tensors_path} is damaged (not readable safetensors: {error})"
        ) from error
    if not isinstance(manifest["edits"], list) or not manifest["edits"]:
        raise PatchFormatError(f"{manifest_path}: 'edits' must be a non-empty list")
    edits = tuple(
        _edit(index, entry, tensors, tensors_path) for index, entry in enumerate(manifest["edits"])
    )
    return Patch(
        base_model=manifest["base_model"],
        edits=edits,
        touched_parameters=manifest["touched_parameters"],
        total_parameters=manifest["total_parameters"],
        metrics=manifest.get("metrics", {}),
        provenance=manifest.get("provenance", {}),
    )


def _stored_slot(
    index: int, entry: dict[str, Any], slot: str, tensors: dict[str, torch.Tensor], path: Path
) -> torch.Tensor:
    """The slot's tensor, refused unless its SHA-256 is the manifest's (the file is damaged)."""
    stored = entry["tensors"].get(slot) if isinstance(entry["tensors"], dict) else None
    if not isinstance(stored, dict) or not {"name", "sha256"} <= stored.keys():
        raise PatchFormatError(f"edit {index} of the manifest lacks tensors.{slot}.name/sha256")
    if stored["name"] not in tensors:
        raise PatchFormatError(f"{path} lacks tensor {stored['name']!r}")
    tensor = tensors[stored["name"]]
    digest = tensor_sha256(tensor)
    if digest != stored["sha256"]:
        raise PatchFormatError(
            f"{path}: tensor {stored['name']!r} has SHA-256 {digest[:16]}..., the manifest says "
            f"{str(stored['sha256'])[:16]}...: the patch file is damaged (re-create or re-copy "
            "it); the model was not touched"
        )
    return tensor


def _edit(
    index: int, entry: dict[str, Any], tensors: dict[str, torch.Tensor], path: Path
) -> ColumnEdit:
    _require(entry, _REQUIRED_IN_EDIT, f"edit {index} of the manifest")
    slots = {slot: _stored_slot(index, entry, slot, tensors, path) for slot in _SLOTS}
    width, k = entry["shape"][0 if entry["orientation"] == "out_in" else 1], len(entry["columns"])
    if slots["columns"].tolist() != entry["columns"]:
        raise PatchFormatError(f"edit {index}: column tensor differs from the manifest's columns")
    for slot in ("before", "after"):
        if tuple(slots[slot].shape) != (width, k) or str(slots[slot].dtype) != entry["dtype"]:
            raise PatchFormatError(
                f"edit {index}: {slot} is {tuple(slots[slot].shape)} {slots[slot].dtype}, "
                f"expected {(width, k)} {entry['dtype']}"
            )
    return ColumnEdit(
        name=entry["name"],
        layer=entry["layer"],
        site=entry["site"],
        orientation=entry["orientation"],
        shape=tuple(entry["shape"]),
        dtype=entry["dtype"],
        alpha=entry["alpha"],
        sha256_before=entry["sha256_before"],
        sha256_after=entry["sha256_after"],
        **slots,
    )

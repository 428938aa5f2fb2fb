"""The Patch: column edits as data, stored as `patch.safetensors` + a `patch.json` manifest.

Each edit keeps the direction, the column indices and both the original and the edited column
slices, so applying writes stored bits (no recomputation that could round differently) and
reverting restores the original bits exactly. The manifest records, per touched tensor, its
name, shape, dtype and the SHA-256 of the whole tensor before and after. No pickle: tensors go
through safetensors, everything else is JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from loopfix.models import Orientation

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

PATCH_FORMAT = "loopfix.patch/1"
MANIFEST_NAME = "patch.json"
TENSORS_NAME = "patch.safetensors"
_SLOTS = ("direction", "columns", "before", "after")


class PatchFormatError(ValueError):
    """A patch file is missing, malformed, or its tensors do not match its manifest."""


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
                {**edit.manifest(), "tensors": {slot: f"edit{index}.{slot}" for slot in _SLOTS}}
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
    """Write `folder/patch.safetensors` and `folder/patch.json`; returns the manifest path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {
        f"edit{index}.{slot}": getattr(edit, slot).detach().cpu().contiguous()
        for index, edit in enumerate(patch.edits)
        for slot in _SLOTS
    }
    save_file(tensors, str(folder / TENSORS_NAME), metadata={"format": PATCH_FORMAT})
    manifest = folder / MANIFEST_NAME
    manifest.write_text(json.dumps(patch.manifest(), indent=1) + "\n")
    return manifest


def load_patch(path: Path) -> Patch:
    manifest_path = resolve_patch_path(path)
    try:
        manifest = json.loads(manifest_path.read_text())
    except json.JSONDecodeError as error:
        raise PatchFormatError(f"{manifest_path} is not JSON: {error}") from error
    if manifest.get("format") != PATCH_FORMAT:
        raise PatchFormatError(
            f"{manifest_path} has format {manifest.get('format')!r}, expected {PATCH_FORMAT!r}"
        )
    tensors = load_file(str(manifest_path.parent / TENSORS_NAME))
    edits = tuple(_edit(index, entry, tensors) for index, entry in enumerate(manifest["edits"]))
    return Patch(
        base_model=manifest["base_model"],
        edits=edits,
        touched_parameters=manifest["touched_parameters"],
        total_parameters=manifest["total_parameters"],
        metrics=manifest.get("metrics", {}),
        provenance=manifest.get("provenance", {}),
    )


def _edit(index: int, entry: dict[str, Any], tensors: dict[str, torch.Tensor]) -> ColumnEdit:
    try:
        slots = {slot: tensors[f"edit{index}.{slot}"] for slot in _SLOTS}
    except KeyError as error:
        raise PatchFormatError(f"{TENSORS_NAME} lacks tensor {error.args[0]}") from None
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

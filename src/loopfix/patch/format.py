"""The Patch: column edits as data, stored as `patch.safetensors` + a `patch.json` manifest.

Each edit keeps its operation ("along" a direction, or "scale": a neuron edit, which has no
direction), the direction, the column indices and both the original and the edited column
slices, so applying writes stored bits (no recomputation that could round differently) and
reverting restores the original bits exactly. The manifest records, per touched tensor, its
name, shape, dtype and the SHA-256 of the whole tensor before and after, and, per stored slot
(direction, columns, before, after), the SHA-256 of the slot itself: a patch checks its own
files when loaded, so damage is blamed on the patch, never on the model. The manifest ends with
`manifest_sha256`, the hash of all its other fields (`loopfix.patch.manifest`), and every field
is validated on load. No pickle: tensors go through safetensors, everything else is JSON.

Format 1 stored no slot checksums, format 2 no manifest hash; such patches are refused with a
request to re-create them. Format 3 had no operation field (every edit was along a direction):
it reads as format 4 with "along".
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
from pydantic import ValidationError
from safetensors import SafetensorError
from safetensors.torch import load_file, save

from loopfix.atomic import atomic_writer, write_json_atomic
from loopfix.errors import LoopfixError, field_problem
from loopfix.models.architectures import Orientation
from loopfix.patch.hashing import tensor_sha256
from loopfix.patch.manifest import (
    HASH_FIELD,
    BaseModelInfo,
    Manifest,
    ManifestEdit,
    Operation,
    manifest_sha256,
    with_hash,
)

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

PATCH_FORMAT = "loopfix.patch/4"
_READABLE = (PATCH_FORMAT, "loopfix.patch/3")
MANIFEST_NAME = "patch.json"
TENSORS_NAME = "patch.safetensors"
_SLOTS = ("direction", "columns", "before", "after")
# What an older manifest lacked, said when it is refused.
_OLD_FORMATS = {
    "loopfix.patch/1": " (format 1 kept no checksums of its stored tensors: re-create the patch "
    "with `loopfix repair`)",
    "loopfix.patch/2": " (format 2 kept no hash of its own manifest, so an edited field went "
    "unnoticed: re-create the patch with `loopfix repair`)",
}


class PatchFormatError(LoopfixError, ValueError):
    """A patch file is missing, malformed, damaged, or its tensors do not match its manifest."""


@dataclass(frozen=True)
class ColumnEdit:
    """One edited weight: W[:, columns] <- after (the original columns are kept in `before`).

    `before`/`after` are [width, k] slices of the write matrix (the orientation-free view);
    `direction` is None for a neuron edit (operation "scale": after = alpha * before).
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
    direction: torch.Tensor | None
    columns: torch.Tensor
    before: torch.Tensor
    after: torch.Tensor

    @property
    def operation(self) -> Operation:
        return "scale" if self.direction is None else "along"

    @property
    def slots(self) -> dict[str, torch.Tensor]:
        """The stored tensors by slot name (a neuron edit stores no direction)."""
        stored = {slot: getattr(self, slot) for slot in _SLOTS}
        return {slot: tensor for slot, tensor in stored.items() if tensor is not None}

    def manifest(self) -> dict[str, object]:
        return {
            "name": self.name,
            "operation": self.operation,
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
    base_model: BaseModelInfo
    edits: tuple[ColumnEdit, ...]
    touched_parameters: int
    total_parameters: int
    # The repair's numbers, written and shown whole (the patch reads none of them).
    metrics: Mapping[str, object] = field(default_factory=dict)
    provenance: Mapping[str, object] = field(default_factory=dict)
    """How the direction was found (method, layers, seeds) and the software versions."""

    @property
    def touched_fraction(self) -> float:
        return self.touched_parameters / self.total_parameters

    def manifest(self) -> dict[str, object]:
        """patch.json: the fields, then the hash that covers them all."""
        return with_hash(
            {
                "format": PATCH_FORMAT,
                "base_model": self.base_model.model_dump(),
                "edits": [
                    {
                        **edit.manifest(),
                        "tensors": {
                            slot: {
                                "name": _slot_name(index, slot),
                                "sha256": tensor_sha256(tensor),
                            }
                            for slot, tensor in edit.slots.items()
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
        _slot_name(index, slot): tensor.detach().cpu().contiguous()
        for index, edit in enumerate(patch.edits)
        for slot, tensor in edit.slots.items()
    }
    with atomic_writer(folder / TENSORS_NAME, binary=True) as handle:
        handle.write(save(tensors, metadata={"format": PATCH_FORMAT}))
    manifest = folder / MANIFEST_NAME
    write_json_atomic(manifest, patch.manifest())
    return manifest


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    # JSON keeps the last of two equal keys: the file would show one value and apply another.
    repeated = [key for key, count in Counter(key for key, _ in pairs).items() if count > 1]
    if repeated:
        raise PatchFormatError(f"a JSON object repeats the key {repeated[0]!r}")
    return dict(pairs)


def _read_manifest(manifest_path: Path) -> dict[str, object]:
    try:
        manifest = json.loads(
            manifest_path.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicates
        )
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PatchFormatError(f"{manifest_path} is not JSON: {error}") from error
    except PatchFormatError as error:
        raise PatchFormatError(f"{manifest_path}: {error}") from None
    if not isinstance(manifest, dict):
        raise PatchFormatError(f"{manifest_path} is not a JSON object")
    return manifest


def _check_format(manifest: Mapping[str, object], manifest_path: Path) -> None:
    if "format" not in manifest:
        raise PatchFormatError(f"{manifest_path} lacks 'format'")
    found = manifest["format"]
    if found not in _READABLE:
        # found may be any JSON value (a list is no key of the table of old formats)
        old = _OLD_FORMATS.get(found, "") if isinstance(found, str) else ""
        raise PatchFormatError(
            f"{manifest_path} has format {found!r}, expected {PATCH_FORMAT!r}{old}"
        )


def load_patch(path: Path) -> Patch:
    """Read and check a patch: its manifest's fields, the manifest's own hash, and every
    stored tensor's checksum."""
    manifest_path = resolve_patch_path(path)
    raw = _read_manifest(manifest_path)
    _check_format(raw, manifest_path)
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as error:
        raise PatchFormatError(
            field_problem(str(manifest_path), error, "a patch manifest")
        ) from None
    digest = manifest_sha256(raw)
    if digest != manifest.manifest_sha256:
        raise PatchFormatError(
            f"{manifest_path} was edited: its content has SHA-256 {digest[:16]}..., its "
            f"{HASH_FIELD} says {manifest.manifest_sha256[:16]}...; re-create or re-copy the "
            "patch (the model was not touched)"
        )
    tensors_path = manifest_path.parent / TENSORS_NAME
    try:
        tensors = load_file(str(tensors_path))
    except (SafetensorError, OSError) as error:
        raise PatchFormatError(
            f"{tensors_path} is damaged (not readable safetensors: {error})"
        ) from error
    edits = tuple(
        _edit(index, entry, tensors, tensors_path) for index, entry in enumerate(manifest.edits)
    )
    return Patch(
        base_model=manifest.base_model,
        edits=edits,
        touched_parameters=manifest.touched_parameters,
        total_parameters=manifest.total_parameters,
        metrics=manifest.metrics,
        provenance=manifest.provenance,
    )


def _stored_slot(
    entry: ManifestEdit, slot: str, tensors: dict[str, torch.Tensor], path: Path
) -> torch.Tensor:
    """The slot's tensor, refused unless its SHA-256 is the manifest's (the file is damaged)."""
    stored = getattr(entry.tensors, slot)
    if stored.name not in tensors:
        raise PatchFormatError(f"{path} lacks tensor {stored.name!r}")
    tensor = tensors[stored.name]
    digest = tensor_sha256(tensor)
    if digest != stored.sha256:
        raise PatchFormatError(
            f"{path}: tensor {stored.name!r} has SHA-256 {digest[:16]}..., the manifest says "
            f"{stored.sha256[:16]}...: the patch file is damaged (re-create or re-copy "
            "it); the model was not touched"
        )
    return tensor


def _edit(
    index: int, entry: ManifestEdit, tensors: dict[str, torch.Tensor], path: Path
) -> ColumnEdit:
    slots = {
        slot: _stored_slot(entry, slot, tensors, path)
        for slot in _SLOTS
        if getattr(entry.tensors, slot) is not None
    }
    if slots["columns"].tolist() != entry.columns:
        raise PatchFormatError(f"edit {index}: column tensor differs from the manifest's columns")
    expected = {
        "direction": ((entry.width,), "torch.float32"),
        "before": ((entry.width, len(entry.columns)), entry.dtype),
        "after": ((entry.width, len(entry.columns)), entry.dtype),
    }
    for slot, (shape, dtype) in expected.items():
        tensor = slots.get(slot)
        if tensor is not None and (tuple(tensor.shape) != shape or str(tensor.dtype) != dtype):
            raise PatchFormatError(
                f"{path}: edit {index}: {slot} is {tuple(tensor.shape)} "
                f"{tensor.dtype}, expected {shape} {dtype}"
            )
    return ColumnEdit(
        name=entry.name,
        layer=entry.layer,
        site=entry.site,
        orientation=entry.orientation,
        shape=tuple(entry.shape),
        dtype=entry.dtype,
        alpha=entry.alpha,
        sha256_before=entry.sha256_before,
        sha256_after=entry.sha256_after,
        direction=slots.get("direction"),
        columns=slots["columns"],
        before=slots["before"],
        after=slots["after"],
    )

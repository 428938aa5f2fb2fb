"""The patch manifest's schema and its own hash: every field checked on load, none editable.

`manifest_sha256` is the SHA-256 of the manifest without that field, as canonical JSON (keys
sorted, no spaces, UTF-8, floats as Python's `json` writes them). The manifest holds the
checksum of each stored tensor, so this one hash covers the whole patch: a hand-edited alpha, a
changed "before" hash or a swapped tensor is blamed on the patch, never on the model. It is an
integrity check against edits and damage, not a signature.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Annotated, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from loopfix.models.architectures import Orientation
from loopfix.patch.sites import SiteKind

__all__ = [
    "HASH_FIELD",
    "BaseModelInfo",
    "Manifest",
    "ManifestEdit",
    "Operation",
    "manifest_sha256",
    "with_hash",
]

HASH_FIELD = "manifest_sha256"

# An edit along a direction, or a neuron edit that scales its columns (`patch.edit`).
Operation = Literal["along", "scale"]

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Name = Annotated[str, StringConstraints(min_length=1)]
Count = Annotated[int, Field(ge=1)]


def manifest_sha256(manifest: Mapping[str, object]) -> str:
    """The hash of every field but the hash itself, as canonical JSON."""
    content = {key: value for key, value in manifest.items() if key != HASH_FIELD}
    # Hashed as it reads back: JSON turns a metric's key 10 into "10", which sorts otherwise.
    content = json.loads(json.dumps(content))
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def with_hash(manifest: Mapping[str, object]) -> dict[str, object]:
    return {**manifest, HASH_FIELD: manifest_sha256(manifest)}


class _Strict(BaseModel):
    # strict: "0" is not a layer and 1.5 not a column; forbid: a field loopfix does not read
    # would be one the patch seems to say but does not apply.
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Slot(_Strict):
    name: Name
    sha256: Sha256


class _Slots(_Strict):
    direction: _Slot | None = None  # a neuron edit ("scale") has none
    columns: _Slot
    before: _Slot
    after: _Slot


class BaseModelInfo(_Strict):
    """The model a patch was made on: its id, revision (the hub commit; None for a local
    folder), model_type and family."""

    id: str
    revision: str | None
    model_type: str
    family: str


class ManifestEdit(_Strict):
    name: Name
    operation: Operation = "along"  # format 3 had only edits along a direction
    layer: Annotated[int, Field(ge=0)]
    site: SiteKind
    orientation: Orientation
    shape: Annotated[list[Count], Field(min_length=2, max_length=2)]
    dtype: str
    alpha: Annotated[float, Field(allow_inf_nan=False)]
    columns: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]
    sha256_before: Sha256
    sha256_after: Sha256
    tensors: _Slots

    @property
    def width(self) -> int:
        """Rows of the [width, n_inputs] write matrix; the columns index the other axis."""
        return self.shape[0 if self.orientation == "out_in" else 1]

    @property
    def inputs(self) -> int:
        return self.shape[1 if self.orientation == "out_in" else 0]

    @model_validator(mode="after")
    def _consistent(self) -> ManifestEdit:
        if not isinstance(getattr(torch, self.dtype.removeprefix("torch."), None), torch.dtype):
            raise ValueError(f"dtype {self.dtype!r} is not a torch dtype")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError("columns repeat an index")
        if max(self.columns) >= self.inputs:
            raise ValueError(f"column {max(self.columns)} is outside the {self.inputs} inputs")
        if (self.tensors.direction is None) != (self.operation == "scale"):
            raise ValueError(
                f"an edit of operation {self.operation!r} stores a direction "
                "exactly when it is 'along'"
            )
        if self.sha256_before == self.sha256_after:
            raise ValueError("sha256_before equals sha256_after: the edit changes nothing")
        return self


class Manifest(_Strict):
    """patch.json as loopfix writes it (format loopfix.patch/4; /3 reads the same)."""

    format: str
    base_model: BaseModelInfo
    edits: Annotated[list[ManifestEdit], Field(min_length=1)]
    layers: list[int]
    touched_parameters: Count
    total_parameters: Count
    touched_fraction: float
    # Written by the repair and shown whole; the patch itself reads no field of them.
    metrics: Mapping[str, object]
    provenance: Mapping[str, object]
    manifest_sha256: Sha256

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        names = [edit.name for edit in self.edits]
        if len(set(names)) != len(names):
            raise ValueError("two edits touch the same tensor")
        layers = sorted({edit.layer for edit in self.edits})
        if self.layers != layers:
            raise ValueError(f"layers {self.layers} differ from the edits' layers {layers}")
        touched = sum(edit.width * len(edit.columns) for edit in self.edits)
        if self.touched_parameters != touched:
            raise ValueError(f"touched_parameters {self.touched_parameters}, the edits: {touched}")
        if self.touched_parameters > self.total_parameters:
            raise ValueError("touched_parameters exceeds total_parameters")
        fraction = self.touched_parameters / self.total_parameters
        if self.touched_fraction != fraction:
            raise ValueError(f"touched_fraction {self.touched_fraction} is not {fraction}")
        return self

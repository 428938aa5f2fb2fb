"""Build a Patch from edit requests on a loaded model, without changing the model."""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import transformers

from loopfix._version import __version__
from loopfix.models import architecture_for
from loopfix.patch.edit import edited_columns, unit
from loopfix.patch.format import ColumnEdit, Patch
from loopfix.patch.hashing import tensor_sha256
from loopfix.patch.manifest import BaseModelInfo
from loopfix.patch.sites import EditSite, parameter_name, site_orientation, write_view

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["EditRequest", "base_model_info", "build_patch", "software_versions"]


@dataclass(frozen=True)
class EditRequest:
    """Edit these columns of one site along a direction with strength alpha, or (direction
    None) scale them by alpha: a neuron edit (`patch.edit`)."""

    site: EditSite
    direction: torch.Tensor | None
    columns: torch.Tensor
    alpha: float


def software_versions() -> dict[str, str]:
    return {
        "loopfix": __version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
    }


def base_model_info(model: PreTrainedModel, model_id: str | None = None) -> BaseModelInfo:
    """id, revision (the hub commit when the model came from the hub), model type, family."""
    return BaseModelInfo(
        id=model_id or str(getattr(model, "name_or_path", "")),
        revision=getattr(model.config, "_commit_hash", None),
        model_type=model.config.model_type,
        family=architecture_for(model).family,
    )


def build_patch(
    model: PreTrainedModel,
    requests: Sequence[EditRequest],
    *,
    model_id: str | None = None,
    metrics: Mapping[str, object] | None = None,
    provenance: Mapping[str, object] | None = None,
) -> Patch:
    """Compute each edit's before/after columns and whole-tensor hashes; the model is untouched.

    Raises UnsupportedArchitectureError for families outside the table and ValueError when two
    requests touch the same tensor (their order would matter, so one patch holds one per tensor).
    """
    orientation = site_orientation(model)
    edits, names = [], set()
    for request in requests:
        name = parameter_name(model, request.site)
        if name in names:
            raise ValueError(f"two edits touch {name}; merge them into one request")
        names.add(name)
        parameter = model.get_parameter(name)
        write = write_view(model, name, orientation)
        columns = request.columns.to(torch.int64).cpu()
        after = edited_columns(write, request.direction, columns, request.alpha)
        edited = parameter.detach().clone()
        write_view_of = edited if orientation == "out_in" else edited.T
        write_view_of[:, columns] = after
        edits.append(
            ColumnEdit(
                name=name,
                layer=request.site.layer,
                site=request.site.kind,
                orientation=orientation,
                shape=tuple(parameter.shape),
                dtype=str(parameter.dtype),
                alpha=float(request.alpha),
                sha256_before=tensor_sha256(parameter),
                sha256_after=tensor_sha256(edited),
                direction=None
                if request.direction is None
                else unit(request.direction).to(torch.float32),
                columns=columns,
                before=write[:, columns].detach().cpu().clone(),
                after=after.detach().cpu(),
            )
        )
    return Patch(
        base_model=base_model_info(model, model_id),
        edits=tuple(edits),
        touched_parameters=sum(edit.before.numel() for edit in edits),
        total_parameters=sum(p.numel() for p in model.parameters()),
        metrics=metrics or {},
        provenance={"software": software_versions(), **(provenance or {})},
    )

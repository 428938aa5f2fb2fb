"""Weight patches as data: column edits with hashes, applied and reverted bit-exactly.

A patch is `patch.safetensors` (directions, column indices, original and edited columns) plus a
`patch.json` manifest (base model, tensor names, shapes, dtypes, SHA-256 of each touched tensor
before and after, alpha, metrics). No pickle anywhere.
"""

from loopfix.patch.apply import (
    PatchHandle,
    PatchMismatchError,
    apply_patch,
    patched,
    revert_patch,
)
from loopfix.patch.build import EditRequest, base_model_info, build_patch, software_versions
from loopfix.patch.edit import edited_columns, top_columns, unit, write_strength
from loopfix.patch.export import PATCH_COPY_DIR, export_patched, export_reverted, model_card
from loopfix.patch.format import (
    MANIFEST_NAME,
    PATCH_FORMAT,
    TENSORS_NAME,
    ColumnEdit,
    Patch,
    PatchFormatError,
    load_patch,
    resolve_patch_path,
    save_patch,
)
from loopfix.patch.hashing import tensor_sha256
from loopfix.patch.sites import (
    EditSite,
    SiteKind,
    parameter_name,
    site_module,
    site_orientation,
    write_view,
)

__all__ = [
    "MANIFEST_NAME",
    "PATCH_COPY_DIR",
    "PATCH_FORMAT",
    "TENSORS_NAME",
    "ColumnEdit",
    "EditRequest",
    "EditSite",
    "Patch",
    "PatchFormatError",
    "PatchHandle",
    "PatchMismatchError",
    "SiteKind",
    "apply_patch",
    "base_model_info",
    "build_patch",
    "edited_columns",
    "export_patched",
    "export_reverted",
    "load_patch",
    "model_card",
    "parameter_name",
    "patched",
    "resolve_patch_path",
    "revert_patch",
    "save_patch",
    "site_module",
    "site_orientation",
    "software_versions",
    "tensor_sha256",
    "top_columns",
    "unit",
    "write_strength",
    "write_view",
]

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
from loopfix.patch.build import EditRequest, build_patch
from loopfix.patch.export import export_patched, export_reverted
from loopfix.patch.format import Patch, PatchFormatError, load_patch, save_patch
from loopfix.patch.sites import EditSite

__all__ = [
    "EditRequest",
    "EditSite",
    "Patch",
    "PatchFormatError",
    "PatchHandle",
    "PatchMismatchError",
    "apply_patch",
    "build_patch",
    "export_patched",
    "export_reverted",
    "load_patch",
    "patched",
    "revert_patch",
    "save_patch",
]

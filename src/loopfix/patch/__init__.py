"""Weight patches as data: column edits with hashes, applied and reverted bit-exactly.

A patch is `patch.safetensors` (directions, column indices, original and edited columns) plus a
`patch.json` manifest (base model, tensor names, shapes, dtypes, SHA-256 of each touched tensor
before and after, alpha, metrics). No pickle anywhere. A patched model is written as an HF
folder (`export_patched`) or, for a GGUF model, as a GGUF file (`export_patched_gguf`).
"""

from typing import TYPE_CHECKING

from loopfix.lazy import lazy_exports

__all__ = [
    "EditRequest",
    "EditSite",
    "GgufExportConfig",
    "Patch",
    "PatchFormatError",
    "PatchHandle",
    "PatchMismatchError",
    "apply_patch",
    "build_patch",
    "export_patched",
    "export_patched_gguf",
    "export_reverted",
    "load_patch",
    "patched",
    "revert_patch",
    "save_patch",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "EditRequest": "loopfix.patch.build",
        "EditSite": "loopfix.patch.sites",
        "GgufExportConfig": "loopfix.patch.gguf_config",
        "Patch": "loopfix.patch.format",
        "PatchFormatError": "loopfix.patch.format",
        "PatchHandle": "loopfix.patch.apply",
        "PatchMismatchError": "loopfix.patch.apply",
        "apply_patch": "loopfix.patch.apply",
        "build_patch": "loopfix.patch.build",
        "export_patched": "loopfix.patch.export",
        "export_patched_gguf": "loopfix.patch.gguf_export",
        "export_reverted": "loopfix.patch.export",
        "load_patch": "loopfix.patch.format",
        "patched": "loopfix.patch.apply",
        "revert_patch": "loopfix.patch.apply",
        "save_patch": "loopfix.patch.format",
    },
)

if TYPE_CHECKING:
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
    from loopfix.patch.gguf_config import GgufExportConfig
    from loopfix.patch.gguf_export import export_patched_gguf
    from loopfix.patch.sites import EditSite

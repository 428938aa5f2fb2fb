"""A patched GGUF file: the input file with only the tensors a patch touches re-encoded.

Steps of `export_patched_gguf`:
1. Refuse an OUT (or its model card `OUT.md`) that exists (nothing is ever overwritten, the
   input least of all), a file that is not a readable GGUF, and an architecture whose GGUF
   layout loopfix does not know.
2. For each edit: find the GGUF tensor of its HF weight (`GgufTensorMap`), dequantize it with
   gguf-py (the values transformers loads, bit for bit), put it in HF layout and the patch's
   dtype, and apply the edit with the patch's hash checks (`edited_tensor`): a patch made on
   other weights is refused here, before anything is written.
3. Encode the edited tensor (`TensorEncoding` says how): by default in the file's own type,
   re-encoding only the quantization blocks the edit changed (the others keep their bytes);
   where gguf-py cannot quantize that type (the K-quants, the IQ types), the whole tensor as
   F16. `gguf_type="f16"` or `"q8_0"` forces that type for the touched tensors.
4. Write the copy (`write_gguf_copy`: every other tensor and all metadata byte for byte) and a
   model card `OUT.md` saying what was done to each tensor, each atomically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from loopfix.atomic import OutputError, atomic_writer, check_new_output, write_text_atomic
from loopfix.models.gguf import file_sha256, read_gguf
from loopfix.models.gguf_copy import TensorData, write_gguf_copy
from loopfix.models.gguf_tensors import GgufTensorMap
from loopfix.models.modules import oriented
from loopfix.patch.apply import edited_tensor
from loopfix.patch.format import ColumnEdit, Patch
from loopfix.patch.gguf_config import GgufExportConfig

if TYPE_CHECKING:
    from gguf import GGMLQuantizationType, ReaderTensor

__all__ = ["TensorExport", "card_path", "export_patched_gguf"]


@dataclass(frozen=True)
class TensorExport:
    """What was done to one touched tensor."""

    hf_name: str
    gguf_name: str
    source_type: str
    written_type: str
    blocks_written: int
    blocks: int
    max_abs_error: float
    """max |written value - patched value| over the whole tensor."""

    def describe(self) -> str:
        kept = "" if self.blocks_written == self.blocks else ", the other blocks kept"
        return (
            f"{self.gguf_name} ({self.hf_name}): {self.source_type} -> {self.written_type}, "
            f"{self.blocks_written} of {self.blocks} blocks re-encoded{kept}; "
            f"max |written - patched| {self.max_abs_error:.3g}"
        )


def card_path(out: Path) -> Path:
    return out.with_name(out.name + ".md")


def export_patched_gguf(
    source: Path, patch: Patch, out: Path, config: GgufExportConfig | None = None
) -> list[TensorExport]:
    """Write SOURCE with PATCH applied as the GGUF file OUT (and its card); see the module doc."""
    config = config or GgufExportConfig()
    source, out = Path(source), Path(out)
    for path in (out, card_path(out)):
        check_new_output(path, source, folder=False)
    reader = read_gguf(source)
    tensors = GgufTensorMap(reader)
    replacements: dict[str, TensorData] = {}
    report = []
    for edit in patch.edits:
        tensor = tensors.tensor(edit.name)
        original, new = _patched_values(tensors, tensor, edit)
        replacements[tensor.name], row = _encoded(tensor, edit.name, original, new, config)
        report.append(row)
    with atomic_writer(out, binary=True, replace=False) as handle:
        write_gguf_copy(reader, handle, replacements)
    try:
        write_text_atomic(card_path(out), _card(source, patch, out, report), replace=False)
    except BaseException:
        out.unlink()  # ours, just written: a file without its card is a partial output
        raise
    return report


def _patched_values(
    tensors: GgufTensorMap, tensor: ReaderTensor, edit: ColumnEdit
) -> tuple[np.ndarray, np.ndarray]:
    """The tensor's stored values and the patched ones, both in GGUF layout (float32); the
    patch's hash checks run on the HF-layout tensor in the patch's dtype."""
    from gguf import quants

    original = quants.dequantize(tensor.data, tensor.tensor_type)
    hf_original = torch.from_numpy(tensors.to_hf(tensor.name, original).copy())
    dtype = getattr(torch, edit.dtype.removeprefix("torch."))
    edited = oriented(edited_tensor(hf_original.to(dtype), edit), edit.orientation)
    # Only the edited columns take the patch's values: a patch made in a lower dtype would
    # otherwise round every other weight of the tensor too.
    hf_new = hf_original.clone()
    oriented(hf_new, edit.orientation)[:, edit.columns] = edited[:, edit.columns].float()
    return original, tensors.to_gguf(tensor.name, hf_new.numpy())


def _encoded(
    tensor: ReaderTensor,
    hf_name: str,
    original: np.ndarray,
    new: np.ndarray,
    config: GgufExportConfig,
) -> tuple[TensorData, TensorExport]:
    """NEW stored as `config.gguf_type` says; in the file's own type only the changed blocks are
    re-encoded, the others keep their bytes."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quants

    if config.gguf_type == "same" and _can_quantize(tensor.tensor_type):
        target = tensor.tensor_type
    else:
        target = (
            GGMLQuantizationType.Q8_0 if config.gguf_type == "q8_0" else GGMLQuantizationType.F16
        )
    block, block_bytes = GGML_QUANT_SIZES[target]
    if new.shape[-1] % block:
        raise OutputError(
            f"{tensor.name}: rows of {new.shape[-1]} values cannot be stored as {target.name} "
            f"(blocks of {block}); choose another --gguf-type"
        )
    blocks = new.reshape(-1, block)
    if target == tensor.tensor_type:
        changed = (original.reshape(-1, block) != blocks).any(axis=1)
        data = np.array(tensor.data).view(np.uint8).reshape(-1, block_bytes)
    else:
        changed = np.ones(len(blocks), dtype=bool)
        data = np.empty((len(blocks), block_bytes), dtype=np.uint8)
    data[changed] = quants.quantize(blocks[changed], target).view(np.uint8).reshape(-1, block_bytes)
    written = quants.dequantize(data.reshape(*new.shape[:-1], -1), target)
    return TensorData(target, data.reshape(-1)), TensorExport(
        hf_name=hf_name,
        gguf_name=tensor.name,
        source_type=tensor.tensor_type.name,
        written_type=target.name,
        blocks_written=int(changed.sum()),
        blocks=len(blocks),
        max_abs_error=float(np.abs(written - new).max()),
    )


def _can_quantize(tensor_type: GGMLQuantizationType) -> bool:
    from gguf import quants

    try:
        quants.quantize(np.zeros((1, 256), dtype=np.float32), tensor_type)
    except NotImplementedError:
        return False
    return True


def _card(source: Path, patch: Patch, out: Path, report: list[TensorExport]) -> str:
    rows = "\n".join(
        f"| {row.gguf_name} | {row.hf_name} | {row.source_type} | {row.written_type} | "
        f"{row.blocks_written} / {row.blocks} | {row.max_abs_error:.3g} |"
        for row in report
    )
    return "\n".join(
        [
            f"# {out.name}: {patch.base_model.id} with a loopfix patch",
            "",
            f"Written by `loopfix patch apply` from `{source.name}` (SHA-256 "
            f"{file_sha256(source)}).",
            f"Touched weights: {patch.touched_parameters} of {patch.total_parameters} "
            f"({patch.touched_fraction:.4%}); the edit is W <- W - alpha * u (m * (u^T W)) on "
            "the listed columns. Every other tensor and all metadata are the input file's, "
            "byte for byte; the original file is the way back.",
            "",
            "| GGUF tensor | weight | input type | written type | blocks re-encoded | "
            "max abs error |",
            "|---|---|---|---|---|---|",
            rows,
            "",
            "A block is one quantization block (32 weights for Q4_1/Q8_0, 1 for F16); the "
            "error is the largest difference between a written weight and the patched value.",
            "",
            "## Patch",
            "```json",
            json.dumps(
                {"edits": [edit.manifest() for edit in patch.edits], "metrics": patch.metrics},
                indent=1,
            ),
            "```",
            "",
        ]
    )

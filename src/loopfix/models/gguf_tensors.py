"""Which GGUF tensor holds a Hugging Face weight, and how its values are laid out there.

Names come from gguf-py's own table (`gguf.get_tensor_name_map`, what llama.cpp's converter
uses): `model.layers.3.mlp.down_proj.weight` is `blk.3.ffn_down.weight`. Layout: a GGUF matrix
lists its dimensions innermost first (ne0 = the input width), and its data read row-major is
the torch weight's [out, in] array, so no transpose is needed. What does differ is per
architecture and lives in `GGUF_LAYOUTS`: llama.cpp's converter permutes the rows of Llama's
attn_q/attn_k within each head (rotary pairs (i, i + d/2) stored as (2i, 2i + 1)), and stores
Gemma's RMSNorm weights plus one (Gemma scales by 1 + w); transformers undoes both on load.
An architecture missing from the table is refused by name, rather than written with a layout
nobody checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from loopfix.models.errors import ModelLoadError

if TYPE_CHECKING:
    from gguf import GGUFReader, ReaderTensor

__all__ = ["GGUF_LAYOUTS", "GgufLayout", "GgufTensorMap", "UnsupportedGgufError"]


class UnsupportedGgufError(ModelLoadError):
    """A GGUF file whose tensor names or layout loopfix does not know."""


@dataclass(frozen=True)
class GgufLayout:
    """What an architecture's GGUF tensors do differently from its HF weights, beyond names."""

    rope_permuted: tuple[str, ...]
    """GGUF tensor kinds (`attn_q`) whose rows llama.cpp's converter permutes per head."""
    norm_offset: float = 0.0
    """Added to every norm weight (tensor kinds ending in `norm`) by the converter."""


GGUF_LAYOUTS: dict[str, GgufLayout] = {
    # Checked on SmolLM2-135M-Instruct (tests/models/test_gguf_tensors.py): every tensor of the
    # GGUF maps to the transformers-converted weight bit for bit.
    "llama": GgufLayout(rope_permuted=("attn_q", "attn_k")),
    # Checked on Gemma 3 270M's Q4_K_M file (tests/patch/test_gguf_export_gemma3.py), all
    # tensors bit for bit.
    "gemma3": GgufLayout(rope_permuted=(), norm_offset=1.0),
}


def _field(reader: GGUFReader, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        raise UnsupportedGgufError(f"{reader.data.filename}: metadata key {key!r} is missing")
    return field.contents()


class GgufTensorMap:
    """HF weight name <-> GGUF tensor, and the value layout between them, for one file."""

    def __init__(self, reader: GGUFReader) -> None:
        from gguf import MODEL_ARCH_NAMES, get_tensor_name_map

        self.path = str(reader.data.filename)
        self.arch = str(_field(reader, "general.architecture"))
        if self.arch not in GGUF_LAYOUTS:
            raise UnsupportedGgufError(
                f"{self.path}: loopfix does not know the GGUF tensor layout of architecture "
                f"{self.arch!r} (known: {', '.join(sorted(GGUF_LAYOUTS))})"
            )
        self.layout = GGUF_LAYOUTS[self.arch]
        arch_id = next(key for key, name in MODEL_ARCH_NAMES.items() if name == self.arch)
        self.names = get_tensor_name_map(arch_id, int(_field(reader, f"{self.arch}.block_count")))
        self.heads = int(_field(reader, f"{self.arch}.attention.head_count"))
        kv_key = f"{self.arch}.attention.head_count_kv"
        self.kv_heads = int(_field(reader, kv_key)) if kv_key in reader.fields else self.heads
        self.tensors: dict[str, ReaderTensor] = {tensor.name: tensor for tensor in reader.tensors}

    def gguf_name(self, hf_name: str) -> str:
        base, _, suffix = hf_name.rpartition(".")
        mapped = self.names.get_name(base)
        if mapped is None or f"{mapped}.{suffix}" not in self.tensors:
            raise UnsupportedGgufError(
                f"{self.path} has no tensor for the weight {hf_name!r} "
                f"(looked for {mapped or '(no name in the ' + self.arch + ' table)'}.{suffix})"
            )
        return f"{mapped}.{suffix}"

    def tensor(self, hf_name: str) -> ReaderTensor:
        return self.tensors[self.gguf_name(hf_name)]

    def to_hf(self, gguf_name: str, values: np.ndarray) -> np.ndarray:
        """GGUF-layout values (as `gguf.quants.dequantize` returns them) in the HF layout."""
        if self._offset(gguf_name):
            return values - np.float32(self.layout.norm_offset)
        heads = self._permuted_heads(gguf_name)
        if heads is None:
            return values
        rows = values.reshape(heads, -1, 2, *values.shape[1:])
        return rows.swapaxes(1, 2).reshape(values.shape)

    def to_gguf(self, gguf_name: str, values: np.ndarray) -> np.ndarray:
        """The inverse of `to_hf`."""
        if self._offset(gguf_name):
            return values + np.float32(self.layout.norm_offset)
        heads = self._permuted_heads(gguf_name)
        if heads is None:
            return values
        rows = values.reshape(heads, 2, -1, *values.shape[1:])
        return rows.swapaxes(1, 2).reshape(values.shape)

    def _offset(self, gguf_name: str) -> bool:
        return bool(self.layout.norm_offset) and gguf_name.split(".")[-2].endswith("norm")

    def _permuted_heads(self, gguf_name: str) -> int | None:
        kind = gguf_name.split(".")[-2]
        if kind not in self.layout.rope_permuted:
            return None
        # Keys have one head per KV group; queries have all heads.
        return self.kv_heads if kind == "attn_k" else self.heads

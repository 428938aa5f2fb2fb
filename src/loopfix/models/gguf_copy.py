"""Write a copy of a GGUF file with some tensors' data replaced and everything else as it was.

The header and the metadata (key/value) section are copied as raw bytes, so every key, the
tokenizer and the chat template come through untouched. The tensor table is written again,
because a replaced tensor may change type and size and so move the offsets after it; each
tensor's data starts at the file's alignment, with zero padding, as llama.cpp writes it. A
replacement of the same type and size leaves every offset where it was, so the copy differs
from the original only inside the replaced tensors' data.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import numpy as np

from loopfix.models.errors import ModelLoadError

if TYPE_CHECKING:
    from gguf import GGMLQuantizationType, GGUFReader

__all__ = ["TensorData", "write_gguf_copy"]

# magic (4 bytes), version (uint32), tensor count (uint64), key/value count (uint64)
_HEADER_BYTES = 24


@dataclass(frozen=True)
class TensorData:
    """A tensor's new stored bytes and their type (the dimensions stay the original's)."""

    tensor_type: GGMLQuantizationType
    data: np.ndarray
    """The stored bytes, as uint8."""


def write_gguf_copy(
    reader: GGUFReader, handle: IO[bytes], replacements: Mapping[str, TensorData]
) -> None:
    """Write the file `reader` parsed to `handle`, with `replacements` by tensor name."""
    if reader.byte_order != "I":
        raise ModelLoadError(
            f"{reader.data.filename} is a big-endian GGUF; loopfix writes only little-endian files"
        )
    unknown = set(replacements) - {tensor.name for tensor in reader.tensors}
    if unknown:
        raise KeyError(f"no tensor named {sorted(unknown)} in {reader.data.filename}")
    alignment = reader.alignment
    stored = [
        replacements.get(tensor.name)
        or TensorData(
            tensor.tensor_type,
            reader.data[tensor.data_offset : tensor.data_offset + tensor.n_bytes],
        )
        for tensor in reader.tensors
    ]
    handle.write(reader.data[: reader.tensors[0].field.offset].tobytes())
    offset = 0
    table = bytearray()
    for tensor, data in zip(reader.tensors, stored, strict=True):
        name = tensor.name.encode("utf-8")
        dims = tensor.field.parts[3]  # the dimensions as the file lists them (ne0 first)
        table += struct.pack(f"<Q{len(name)}sI", len(name), name, len(dims))
        table += struct.pack(f"<{len(dims)}QIQ", *(int(d) for d in dims), data.tensor_type, offset)
        offset += _padded(data.data.nbytes, alignment)
    handle.write(table)
    position = reader.tensors[0].field.offset + len(table)
    handle.write(bytes(_padded(position, alignment) - position))
    for data in stored:
        handle.write(np.ascontiguousarray(data.data).view(np.uint8).tobytes())
        handle.write(bytes(_padded(data.data.nbytes, alignment) - data.data.nbytes))


def _padded(size: int, alignment: int) -> int:
    return -(-size // alignment) * alignment

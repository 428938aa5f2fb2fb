"""SHA-256 of a tensor's stored bytes: the identity a patch checks before and after editing."""

from __future__ import annotations

import hashlib

import torch

__all__ = ["tensor_sha256"]


def tensor_sha256(tensor: torch.Tensor) -> str:
    """Hash of the raw bytes in row-major order; dtype and shape are checked separately.

    Viewing as bytes works for every dtype (bfloat16 has no numpy equivalent).
    """
    data = tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8)
    return hashlib.sha256(data.numpy().tobytes()).hexdigest()

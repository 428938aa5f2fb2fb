"""Low-rank weight deltas (LoRA factors) shipped beside a base model, and the models built from
them: `loopfix:NAME` of a `DerivedModel` is its base model with the delta merged in.

A delta folder holds `delta.safetensors` (for each touched linear weight `W` of shape
(out, in), `NAME.lora_A` (rank, in) and `NAME.lora_B` (out, rank)) and `provenance.json`
(how it was made; `scale` is read from the safetensors metadata). Merging computes
`W + scale * B @ A` in float64 and rounds once to the weight's dtype, so the merged weights are
the same bits on every machine and thread count. The merged model is written once into the
loopfix cache, keyed by the base folder's and the delta's hashes, so every verb (and vLLM, which
takes a folder) loads a plain Hugging Face folder.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors.torch import load_file, safe_open

from loopfix.atomic import atomic_folder
from loopfix.models.errors import ModelLoadError
from loopfix.models.gguf import cache_dir, file_sha256

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "DELTA_FILE",
    "DERIVED_MODELS",
    "DerivedModel",
    "delta_factors",
    "derived_folder",
    "file_sha256",  # gguf's, for `lab`, which may import this module only
    "merge_delta",
]

DELTA_FILE = "delta.safetensors"


@dataclass(frozen=True)
class DerivedModel:
    """A bundled model made of a packaged base model and a delta under `lab/checkpoints/`."""

    base: str
    """The `loopfix:NAME` of the base (a packaged GGUF)."""
    folder: str
    """The delta's folder name under the bundled checkpoints."""
    sha256: str
    """The pinned SHA-256 of its `delta.safetensors`."""


DERIVED_MODELS: dict[str, DerivedModel] = {
    # SmolLM2-135M-Instruct distilled on the thinking teacher's traces (docs/thinking.md):
    # `loopfix lab train --variant smollm2-think --seed 0` writes this delta (LoRA rank 8 on
    # layers 18-29, 3.9 MB).
    "smollm2-think": DerivedModel(
        base="smollm2",
        folder="smollm2-think",
        sha256="f3af571c5043e8d917b81e36b8e9d6c9b1bf314b4711b5026a970aaa4a0e4311",
    ),
}


def delta_factors(path: Path) -> tuple[dict[str, tuple[torch.Tensor, torch.Tensor]], float]:
    """The (A, B) factors per weight name, and the scale, of a delta file."""
    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata() or {}
    if "scale" not in metadata:
        raise ModelLoadError(f"{path}: not a loopfix delta (no 'scale' in its metadata)")
    tensors = load_file(str(path))
    names = sorted({key.rsplit(".lora_", 1)[0] for key in tensors})
    factors = {}
    for name in names:
        a, b = tensors.get(f"{name}.lora_A"), tensors.get(f"{name}.lora_B")
        if a is None or b is None or a.shape[0] != b.shape[1]:
            raise ModelLoadError(f"{path}: {name} needs lora_A (r, in) and lora_B (out, r)")
        factors[name] = (a, b)
    return factors, float(metadata["scale"])


def merge_delta(model: nn.Module, path: Path) -> list[str]:
    """Add the delta in `path` to `model`'s weights in place; the names of the weights touched.
    Every name must be a weight of the model with the factors' shape, else nothing changes."""
    factors, scale = delta_factors(path)
    parameters = dict(model.named_parameters())
    for name, (a, b) in factors.items():
        weight = parameters.get(name)
        if weight is None or tuple(weight.shape) != (b.shape[0], a.shape[1]):
            raise ModelLoadError(f"{path}: {name} is not a weight of this model with its shape")
    with torch.no_grad():
        for name, (a, b) in factors.items():
            weight = parameters[name]
            update = scale * (b.double() @ a.double())
            weight.copy_((weight.double() + update).to(weight.dtype))
    return sorted(factors)


def derived_folder(name: str, base_folder: Path, delta_dir: Path) -> Path:
    """The merged Hugging Face folder of derived model `name`, built into the cache on first
    use: the delta is checked against its pinned hash before anything is written."""
    entry = DERIVED_MODELS[name]
    delta = delta_dir / DELTA_FILE
    if not delta.is_file():
        raise ModelLoadError(f"loopfix:{name}: its delta {delta} is missing from the package")
    digest = file_sha256(delta)
    if digest != entry.sha256:
        raise ModelLoadError(
            f"loopfix:{name}: {delta} has SHA-256 {digest}, not the pinned {entry.sha256}"
        )
    base_key = hashlib.sha256(str(base_folder.resolve()).encode()).hexdigest()[:16]
    target = cache_dir() / "derived" / f"{name}-{base_key}-{digest[:16]}"
    if target.is_dir():
        return target
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base_folder), dtype=torch.float32)
    merge_delta(model, delta)
    with atomic_folder(target) as folder:
        model.save_pretrained(folder)
        for file in base_folder.iterdir():  # tokenizer, chat template, generation config
            if file.is_file() and not (folder / file.name).exists():
                shutil.copy2(file, folder / file.name)
        shutil.copy2(delta_dir / "provenance.json", folder / "provenance.json")
    return target

"""`loopfix patch apply` back to Gemma 3 270M's GGUF (the second layout: no rotary row
permutation; RMSNorm weights stored plus one). Greedy agreement of the written file reloaded
is bench/bench_gguf_export.py --model gemma3-270m's job (docs/real-model.md)."""

from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader, quants
from safetensors.numpy import load_file
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.models import load_model
from loopfix.models.gguf_tensors import GgufTensorMap
from loopfix.models.packaged import packaged_model_path
from loopfix.patch import build_patch, patched, save_patch

from .helpers import smollm2_requests

pytestmark = pytest.mark.slow
SOURCE = packaged_model_path("gemma3-270m")


def test_every_gemma3_tensor_maps_to_the_loaders_weight_bit_for_bit(gemma3_folder: Path) -> None:
    reader = GGUFReader(SOURCE)
    names = GgufTensorMap(reader)
    weights = load_file(str(gemma3_folder / "model.safetensors"))
    offset = 0
    for hf_name, weight in weights.items():
        gguf_name = names.gguf_name(hf_name)
        tensor = names.tensors[gguf_name]
        stored = quants.dequantize(tensor.data, tensor.tensor_type).reshape(weight.shape)
        assert np.array_equal(names.to_hf(gguf_name, stored), weight), hf_name
        assert np.array_equal(names.to_gguf(gguf_name, weight), stored), hf_name
        offset += not np.array_equal(stored, weight)
    assert len(weights) == len(reader.tensors) == 236
    assert offset == 18 * 6 + 1  # 6 norms per block (q/k norms included) and the final one


def test_a_gemma3_patch_goes_back_as_f16_and_nothing_else_moves(tmp_path: Path) -> None:
    model, _ = load_model("loopfix:gemma3-270m", device="cpu")
    patch = build_patch(model, smollm2_requests(model, (1, 9), 8, 2.0))
    save_patch(patch, tmp_path / "patch")
    out = tmp_path / "patched.gguf"
    result = CliRunner().invoke(
        app, ["patch", "apply", str(SOURCE), str(tmp_path / "patch"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("-> F16") == 2  # K-quant tensors are written as F16
    source, written = GGUFReader(SOURCE), GGUFReader(out)
    names = GgufTensorMap(written)
    with patched(model, patch):
        targets = {
            names.gguf_name(edit.name): model.get_parameter(edit.name).detach().numpy().copy()
            for edit in patch.edits
        }
    by_name = {tensor.name: tensor for tensor in written.tensors}
    for tensor in source.tensors:
        copy = by_name[tensor.name]
        if tensor.name in targets:
            values = quants.dequantize(copy.data, copy.tensor_type).reshape(
                targets[tensor.name].shape
            )
            assert np.array_equal(
                values, targets[tensor.name].astype(np.float16).astype(np.float32)
            )
        else:
            assert copy.tensor_type == tensor.tensor_type
            assert np.array_equal(np.asarray(copy.data), np.asarray(tensor.data)), tensor.name

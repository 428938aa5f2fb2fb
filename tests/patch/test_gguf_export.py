"""`loopfix patch apply model.gguf PATCH --out patched.gguf` on the real SmolLM2 file.

Greedy outputs of the written files reloaded through the loader, and llama.cpp's, are compared
with the patched model in bench/bench_gguf_export.py (a conversion per file is too slow here).
"""

from pathlib import Path

import numpy as np
import pytest
import torch
from gguf import GGML_QUANT_SIZES, GGUFReader, GGUFWriter, ReaderTensor, quants
from safetensors.numpy import load_file
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.models import load_model
from loopfix.models.gguf_tensors import GgufTensorMap
from loopfix.models.packaged import packaged_model_path
from loopfix.patch import Patch, build_patch, patched, save_patch
from loopfix.patch.gguf_export import card_path
from loopfix.repair.neurons import neuron_candidate

from .helpers import fresh, requests_for, smollm2_requests

pytestmark = pytest.mark.slow
runner = CliRunner()
SOURCE = packaged_model_path("smollm2")


@pytest.fixture(scope="module")
def smollm2_patch(
    smollm2_folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[torch.nn.Module, Patch, Path]:
    """SmolLM2 in float32, a real patch on it (16 down_proj columns of layers 4 and 20), and
    that patch saved."""
    model, _ = load_model("loopfix:smollm2", device="cpu")
    patch = build_patch(model, smollm2_requests(model), model_id="loopfix:smollm2")
    folder = tmp_path_factory.mktemp("patch")
    save_patch(patch, folder)
    return model, patch, folder


@pytest.fixture(scope="module")
def source_reader() -> GGUFReader:
    return GGUFReader(SOURCE)


def _apply(patch_dir: Path, out: Path, *options: str, model: Path = SOURCE):
    return runner.invoke(
        app, ["patch", "apply", str(model), str(patch_dir), "--out", str(out), *options]
    )


def _patched_values(
    model: torch.nn.Module, patch: Patch, names: GgufTensorMap
) -> dict[str, np.ndarray]:
    """The patched model's touched weights in GGUF layout, by GGUF tensor name."""
    with patched(model, patch):
        return {
            names.gguf_name(edit.name): names.to_gguf(
                names.gguf_name(edit.name), model.get_parameter(edit.name).detach().numpy().copy()
            )
            for edit in patch.edits
        }


def _by_name(reader: GGUFReader) -> dict[str, ReaderTensor]:
    return {tensor.name: tensor for tensor in reader.tensors}


def _stored(tensor: ReaderTensor) -> np.ndarray:
    return np.asarray(tensor.data).view(np.uint8).reshape(-1)


def test_every_gguf_tensor_maps_to_the_loaders_weight_bit_for_bit(
    smollm2_folder: Path, source_reader: GGUFReader
) -> None:
    """The name and layout mapping the export writes through, checked on all 272 tensors
    against the weights transformers converted from the same file."""
    names = GgufTensorMap(source_reader)
    weights = load_file(str(smollm2_folder / "model.safetensors"))
    assert len(weights) == len(source_reader.tensors) == 272
    permuted = 0
    for hf_name, weight in weights.items():
        gguf_name = names.gguf_name(hf_name)
        tensor = names.tensors[gguf_name]
        stored = quants.dequantize(tensor.data, tensor.tensor_type)
        assert np.array_equal(names.to_hf(gguf_name, stored), weight), hf_name
        assert np.array_equal(names.to_gguf(gguf_name, weight), stored), hf_name
        permuted += not np.array_equal(stored, weight)
    assert permuted == 2 * 30  # attn_q and attn_k of every layer, and nothing else


def test_own_type_export_changes_only_the_edited_blocks(
    smollm2_patch, source_reader: GGUFReader, tmp_path: Path
) -> None:
    model, patch, patch_dir = smollm2_patch
    out = tmp_path / "patched.gguf"
    result = _apply(patch_dir, out)
    assert result.exit_code == 0, result.output
    assert result.output.count("Q4_1 -> Q4_1") == 2 and card_path(out).is_file()
    assert "blk.4.ffn_down.weight" in card_path(out).read_text()
    reader = GGUFReader(out)
    names = GgufTensorMap(reader)
    source, written = _by_name(source_reader), _by_name(reader)
    targets = _patched_values(model, patch, names)
    # Same types, so same offsets: outside the touched tensors' data the files are identical
    # (header, every metadata key, the tensor table, the padding and all other tensors).
    original, copy = np.fromfile(SOURCE, dtype=np.uint8), np.fromfile(out, dtype=np.uint8)
    differs = original != copy
    for name in targets:
        differs[source[name].data_offset : source[name].data_offset + source[name].n_bytes] = False
    assert original.shape == copy.shape and not differs.any()
    for edit in patch.edits:
        name = names.gguf_name(edit.name)
        block, block_bytes = GGML_QUANT_SIZES[written[name].tensor_type]
        target = targets[name].reshape(-1, block)
        before = quants.dequantize(source[name].data, source[name].tensor_type).reshape(-1, block)
        changed = (before != target).any(axis=1)
        # An edited input column j is one value of block j // 32 in every output row.
        edited_blocks = len({int(column) // block for column in edit.columns})
        assert changed.sum() == edited_blocks * model.config.hidden_size
        old_bytes = _stored(source[name]).reshape(-1, block_bytes)
        new_bytes = _stored(written[name]).reshape(-1, block_bytes)
        assert np.array_equal(old_bytes[~changed], new_bytes[~changed])
        # Re-quantized blocks are within half a Q4_1 step (plus f16 rounding of scale and min)
        # of the patched values, and so differ from the original where the edit is larger.
        values = quants.dequantize(written[name].data, written[name].tensor_type)
        error = np.abs(values.reshape(-1, block) - target).max(axis=1)
        step = (target.max(axis=1) - target.min(axis=1)) / 15
        assert (error[changed] <= 0.5 * step[changed] + 1e-3).all()


def test_f16_export_moves_offsets_and_keeps_every_other_tensor(
    smollm2_patch, source_reader: GGUFReader, tmp_path: Path
) -> None:
    model, patch, patch_dir = smollm2_patch
    out = tmp_path / "patched-f16.gguf"
    result = _apply(patch_dir, out, "--gguf-type", "f16")
    assert result.exit_code == 0, result.output
    assert result.output.count("Q4_1 -> F16") == 2
    reader = GGUFReader(out)
    source, written = source_reader, _by_name(reader)
    assert [tensor.name for tensor in reader.tensors] == [tensor.name for tensor in source.tensors]
    # The header and every metadata key, byte for byte (the tensor table after it moved).
    start = source.tensors[0].field.offset
    assert reader.tensors[0].field.offset == start
    assert np.array_equal(reader.data[:start], source.data[:start])
    targets = _patched_values(model, patch, GgufTensorMap(reader))
    for tensor in source.tensors:
        copy = written[tensor.name]
        assert copy.shape.tolist() == tensor.shape.tolist()
        if tensor.name not in targets:
            assert copy.tensor_type == tensor.tensor_type
            assert np.array_equal(_stored(copy), _stored(tensor)), tensor.name
            continue
        values = quants.dequantize(copy.data, copy.tensor_type)
        target = targets[tensor.name]
        assert np.array_equal(values, target.astype(np.float16).astype(np.float32))


def test_a_neuron_patch_exports_to_gguf_as_the_patched_model(smollm2_patch, tmp_path: Path) -> None:
    """A neuron edit (four MLP units of layer 10 flipped: `repair.neurons`) goes into the GGUF
    file as the patched model holds it."""
    model, _, _ = smollm2_patch
    patch = build_patch(model, neuron_candidate(10, [3, 77, 400, 1201], -1.0).requests)
    save_patch(patch, tmp_path / "neurons")
    out = tmp_path / "neurons-f16.gguf"
    result = _apply(tmp_path / "neurons", out, "--gguf-type", "f16")
    assert result.exit_code == 0, result.output
    reader = GGUFReader(out)
    ((name, target),) = _patched_values(model, patch, GgufTensorMap(reader)).items()
    values = quants.dequantize(_by_name(reader)[name].data, _by_name(reader)[name].tensor_type)
    assert np.array_equal(values, target.astype(np.float16).astype(np.float32))


def test_a_patch_made_on_other_weights_is_refused_and_nothing_is_written(
    smollm2_patch, tmp_path: Path
) -> None:
    model, _, _ = smollm2_patch
    with torch.no_grad():
        # A different revision of the model: one weight of a touched tensor differs.
        weight = model.get_parameter("model.layers.20.mlp.down_proj.weight")
        original = weight[0, 0].clone()
        weight[0, 0] += 1.0
        try:
            other = build_patch(model, smollm2_requests(model))
        finally:
            weight[0, 0] = original
    save_patch(other, tmp_path / "other")
    tiny = fresh("llama")
    save_patch(build_patch(tiny, requests_for(tiny)), tmp_path / "tiny")
    for patch_dir, message in [
        ("other", "model.layers.20.mlp.down_proj.weight: SHA-256"),
        ("tiny", "model.layers.0.mlp.down_proj.weight is (576, 1536) torch.float32; the patch"),
    ]:
        out = tmp_path / f"{patch_dir}.gguf"
        result = _apply(tmp_path / patch_dir, out)
        assert result.exit_code == 2, result.output
        assert message in result.output and len(result.output.strip().splitlines()) == 1
        assert not out.exists() and not card_path(out).exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["other", "tiny"]


def _unknown_architecture(path: Path) -> Path:
    writer = GGUFWriter(path, "gpt2")
    writer.add_block_count(1)
    writer.add_tensor("blk.0.ffn_down.weight", np.zeros((4, 32), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _truncated(path: Path) -> Path:
    with SOURCE.open("rb") as source:
        path.write_bytes(source.read(20_000_000))
    return path


def _existing(path: Path) -> Path:
    path.write_text("already here")
    return path


# (model file from tmp_path, --out from tmp_path and the model, the expected message)
_BAD_INPUTS = {
    "unknown architecture": (
        _unknown_architecture,
        lambda tmp, model: tmp / "out.gguf",
        "does not know the GGUF tensor layout of architecture 'gpt2' (known: gemma3, llama)",
    ),
    "truncated file": (
        _truncated,
        lambda tmp, model: tmp / "out.gguf",
        "is not a readable GGUF file (truncated or corrupt?)",
    ),
    "out is the input": (
        _unknown_architecture,
        lambda tmp, model: model,
        "is the input",
    ),
    "out exists": (
        lambda path: SOURCE,
        lambda tmp, model: _existing(tmp / "out.gguf"),
        "out.gguf exists; give a new path (nothing is ever overwritten)",
    ),
    "model card exists": (
        lambda path: SOURCE,
        lambda tmp, model: _existing(tmp / "out.gguf.md").with_suffix(""),
        "out.gguf.md exists; give a new path (nothing is ever overwritten)",
    ),
    "model is a folder": (
        lambda path: fresh("llama").save_pretrained(path) or path,
        lambda tmp, model: tmp / "out.gguf",
        "only a .gguf model can be written as",
    ),
}


@pytest.mark.parametrize("case", list(_BAD_INPUTS))
def test_bad_inputs_are_one_line_and_write_nothing(
    smollm2_patch, tmp_path: Path, case: str
) -> None:
    _, _, patch_dir = smollm2_patch
    make_model, make_out, message = _BAD_INPUTS[case]
    model = make_model(tmp_path / "model.gguf")
    out = make_out(tmp_path, model)
    before = {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*")}
    result = _apply(patch_dir, out, model=model)
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*")} == before


def test_revert_to_a_gguf_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "restored.gguf"
    result = runner.invoke(
        app, ["patch", "revert", str(SOURCE), str(tmp_path / "patch"), "--out", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert "revert writes an HF folder, not a GGUF file" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not any(tmp_path.iterdir())

import json
from pathlib import Path

import pytest
import torch

from loopfix.patch import PatchFormatError, build_patch, load_patch, patched, save_patch
from loopfix.patch.format import MANIFEST_NAME, TENSORS_NAME
from loopfix.patch.manifest import with_hash

from .helpers import fresh, requests_for


def test_save_load_round_trip_keeps_every_tensor_and_field(tmp_path: Path, family: str) -> None:
    model = fresh(family)
    patch = build_patch(model, requests_for(model), model_id="tiny", metrics={"kl": 0.01})
    manifest_path = save_patch(patch, tmp_path)
    loaded = load_patch(tmp_path)  # the folder works as well as the manifest path
    assert load_patch(manifest_path).manifest() == patch.manifest() == loaded.manifest()
    for ours, theirs in zip(patch.edits, loaded.edits, strict=True):
        for slot in ("direction", "columns", "before", "after"):
            assert torch.equal(getattr(ours, slot), getattr(theirs, slot))
    with patched(model, loaded):
        pass


def test_manifest_holds_what_design_promises(tmp_path: Path) -> None:
    model = fresh("gpt2")
    save_patch(build_patch(model, requests_for(model), model_id="tiny-gpt2"), tmp_path)
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert manifest["base_model"]["id"] == "tiny-gpt2"
    assert manifest["base_model"]["family"] == "gpt2"
    assert manifest["layers"] == [0, 1]
    edit = manifest["edits"][0]
    assert edit["name"] == "transformer.h.0.mlp.c_proj.weight"
    assert edit["orientation"] == "in_out" and edit["shape"] == [128, 64]
    assert {"sha256_before", "sha256_after", "alpha", "columns", "dtype", "tensors"} <= edit.keys()
    assert edit["sha256_before"] != edit["sha256_after"]
    assert (
        manifest["touched_fraction"]
        == manifest["touched_parameters"] / manifest["total_parameters"]
    )
    assert "torch" in manifest["provenance"]["software"]
    # No pickle: the tensor file is safetensors (an 8-byte header length, then JSON).
    header = (tmp_path / TENSORS_NAME).read_bytes()
    assert header[8:9] == b"{"


def test_a_format_3_patch_reads_as_edits_along_their_directions(tmp_path: Path) -> None:
    """Format 3 wrote no "operation" (every edit was along a direction): it still loads and
    applies the same bits."""
    model = fresh("llama")
    patch = build_patch(model, requests_for(model))
    save_patch(patch, tmp_path)
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    manifest.pop("manifest_sha256")
    manifest["format"] = "loopfix.patch/3"
    for edit in manifest["edits"]:
        del edit["operation"]
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(with_hash(manifest)))
    loaded = load_patch(tmp_path)
    assert [edit.operation for edit in loaded.edits] == ["along", "along"]
    for ours, theirs in zip(patch.edits, loaded.edits, strict=True):
        assert torch.equal(ours.after, theirs.after) and torch.equal(ours.before, theirs.before)


def test_broken_patches_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PatchFormatError, match="no patch manifest"):
        load_patch(tmp_path)
    model = fresh("llama")
    save_patch(build_patch(model, requests_for(model)), tmp_path)
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    manifest["edits"][0]["columns"][0] = 60
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(PatchFormatError, match="patch.json was edited"):
        load_patch(tmp_path)
    # With its hash made to match, the manifest still disagrees with the stored tensors.
    manifest = with_hash(manifest)
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(PatchFormatError, match="column tensor differs"):
        load_patch(tmp_path)
    manifest["format"] = "other/9"
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(PatchFormatError, match="format"):
        load_patch(tmp_path / MANIFEST_NAME)
    (tmp_path / TENSORS_NAME).unlink()
    with pytest.raises(PatchFormatError, match="no patch.safetensors"):
        load_patch(tmp_path)

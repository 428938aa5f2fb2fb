"""`loopfix patch` against hostile paths, a full disk, hand-edited manifests and odd umasks
(issue 37): every refusal is one `error:` line, exit 2, with every input and every file already
there byte-identical afterwards."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner, Result

from loopfix.cli import app
from loopfix.models import tiny_model, tiny_tokenizer
from loopfix.patch import EditRequest, EditSite, build_patch, load_patch, save_patch
from loopfix.patch.format import MANIFEST_NAME
from loopfix.patch.manifest import HASH_FIELD, manifest_sha256, with_hash


@pytest.fixture
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    tiny_model("llama", seed=1).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture
def patch(tmp_path: Path) -> Path:
    """A patch for `model` (alpha 6 on three down_proj columns of layer 0)."""
    built = tiny_model("llama", seed=1)
    direction = torch.randn(built.config.hidden_size, generator=torch.Generator().manual_seed(7))
    request = EditRequest(EditSite(0, "down_proj"), direction, torch.tensor([0, 3, 4]), 6.0)
    save_patch(build_patch(built, [request], model_id="tiny"), tmp_path / "patch")
    return tmp_path / "patch"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def one_line_error(result: Result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    lines = [
        line
        for line in result.stderr.splitlines()
        if line.strip() and not line.startswith(("Loading weights", "Writing model shards"))
    ]
    assert len(lines) == 1 and lines[0].startswith("error:"), lines
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every file's bytes and every symbolic link's target, by path."""
    return {
        str(path.relative_to(folder)): os.readlink(path) if path.is_symlink() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() or path.is_symlink()
    }


# 3. the manifest is covered by its own hash, and every field is checked


def _edit_manifest(patch: Path, change: dict[str, object], rehash: bool = False) -> None:
    manifest = json.loads((patch / MANIFEST_NAME).read_text())
    manifest["edits"][0].update(change)
    (patch / MANIFEST_NAME).write_text(json.dumps(with_hash(manifest) if rehash else manifest))


def test_the_hash_covers_every_field_but_itself(patch: Path) -> None:
    manifest = json.loads((patch / MANIFEST_NAME).read_text())
    assert manifest[HASH_FIELD] == manifest_sha256(manifest)
    assert load_patch(patch).manifest() == manifest
    reordered = dict(reversed(list(manifest.items())))  # key order is not content
    assert manifest_sha256(reordered) == manifest[HASH_FIELD]


@pytest.mark.parametrize(
    "change",
    [
        {"alpha": 60.0},
        {"sha256_before": "0" * 64},
        {"sha256_after": "f" * 64},
        {"site": "attn_out"},
    ],
)
def test_an_edited_field_blames_the_patch(
    tmp_path: Path, model: Path, patch: Path, change: dict[str, object]
) -> None:
    _edit_manifest(patch, change)
    before = snapshot(tmp_path)
    for args in (("inspect", patch), ("apply", model, patch, "--out", tmp_path / "out")):
        message = one_line_error(invoke("patch", *args), "patch.json was edited")
        assert "different model" not in message
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"layer": "zero"}, "edits[0].layer: Input should be a valid integer (got 'zero')"),
        ({"layer": -1}, "edits[0].layer: Input should be greater than or equal to 0"),
        ({"alpha": "6"}, "edits[0].alpha: Input should be a valid number"),
        ({"columns": [0, 3, 3]}, "edits[0]: columns repeat an index"),
        ({"columns": [0, 3, 128]}, "edits[0]: column 128 is outside the 128 inputs"),
        ({"orientation": "sideways"}, "edits[0].orientation: Input should be 'out_in'"),
        ({"dtype": "torch.nothing"}, "edits[0]: dtype 'torch.nothing' is not a torch dtype"),
        ({"shape": [64]}, "edits[0].shape: List should have at least 2 items"),
        ({"sha256_after": "xyz"}, "edits[0].sha256_after: String should match pattern"),
        ({"extra": 1}, "edits[0].extra is not a field of a patch manifest"),
    ],
)
def test_every_field_is_validated_naming_it(
    tmp_path: Path, patch: Path, change: dict[str, object], words: str
) -> None:
    # Re-hashed, so the check that fires is the field's own, not the manifest hash.
    _edit_manifest(patch, change, rehash=True)
    one_line_error(invoke("patch", "inspect", patch), f"{patch / MANIFEST_NAME}: {words}")


def test_fields_derived_from_the_edits_are_checked(patch: Path) -> None:
    manifest = json.loads((patch / MANIFEST_NAME).read_text())
    for field, value, words in [
        ("layers", [0, 1], "layers [0, 1] differ from the edits' layers [0]"),
        ("touched_parameters", 7, "touched_parameters 7, the edits: 192"),
        ("touched_fraction", 0.5, "touched_fraction 0.5 is not"),
    ]:
        (patch / MANIFEST_NAME).write_text(json.dumps(with_hash({**manifest, field: value})))
        one_line_error(invoke("patch", "inspect", patch), words)


def test_a_repeated_key_and_an_older_format_are_refused(patch: Path) -> None:
    text = (patch / MANIFEST_NAME).read_text()
    (patch / MANIFEST_NAME).write_text(text.replace('"alpha": 6.0', '"alpha": 60, "alpha": 6.0'))
    one_line_error(invoke("patch", "inspect", patch), "repeats the key 'alpha'")
    manifest = json.loads(text)
    del manifest[HASH_FIELD]
    (patch / MANIFEST_NAME).write_text(json.dumps({**manifest, "format": "loopfix.patch/2"}))
    one_line_error(invoke("patch", "inspect", patch), "no hash of its own manifest", "re-create")

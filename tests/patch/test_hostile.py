"""`loopfix patch` against hostile paths, a full disk, hand-edited manifests and odd umasks
(issue 37): every refusal is one `error:` line, exit 2, with every input and every file already
there byte-identical afterwards."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner, Result

from loopfix.atomic import WriteError, atomic_writer
from loopfix.cli import app
from loopfix.models import tiny_model, tiny_tokenizer
from loopfix.patch import EditRequest, EditSite, build_patch, load_patch, save_patch
from loopfix.patch.export import PATCH_COPY_DIR
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


# 1. --out never takes anything away


def _out_paths(tmp_path: Path, model: Path, patch: Path) -> dict[str, tuple[Path, str]]:
    """Each way to name an input (or a place inside one) as --out, and the word refusing it."""
    (tmp_path / "link-to-patch").symlink_to(patch)
    (tmp_path / "link-to-model").symlink_to(model)
    return {
        "the patch folder": (patch, "is the input"),
        "the patch through a symlink": (tmp_path / "link-to-patch", "is the input"),
        "the patch through ..": (model / ".." / "patch", "is the input"),
        "inside the patch": (patch / "patched", "is inside the input"),
        "inside the patch through a symlink": (tmp_path / "link-to-patch" / "x", "inside"),
        "the model folder": (model, "is the input"),
        "the model through a symlink": (tmp_path / "link-to-model", "is the input"),
        "inside the model": (model / "patched", "is inside the input"),
        "inside the model, two levels down": (model / "a" / "b", "is inside the input"),
    }


@pytest.mark.parametrize("verb", ["apply", "revert"])
def test_out_that_is_or_is_inside_an_input_is_refused(
    tmp_path: Path, model: Path, patch: Path, verb: str
) -> None:
    cases = _out_paths(tmp_path, model, patch)
    before = snapshot(tmp_path)
    for case, (out, words) in cases.items():
        message = one_line_error(invoke("patch", verb, model, patch, "--out", out), words)
        assert "--out" in message, case
        assert snapshot(tmp_path) == before, case


def test_a_folder_that_is_not_empty_is_refused_and_kept(
    tmp_path: Path, model: Path, patch: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    before = snapshot(tmp_path)
    one_line_error(invoke("patch", "apply", model, patch, "--out", out), "not empty", str(out))
    assert snapshot(tmp_path) == before


def test_an_empty_folder_or_a_new_path_is_written(tmp_path: Path, model: Path, patch: Path) -> None:
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "deeper"):
        result = invoke("patch", "apply", model, patch, "--out", out)
        assert result.exit_code == 0, result.output
        assert (out / "model.safetensors").is_file() and (out / PATCH_COPY_DIR).is_dir()
    # A second run onto the written folder is refused: it is not empty.
    one_line_error(invoke("patch", "apply", model, patch, "--out", out), "not empty")
    assert not [path for path in tmp_path.rglob(".*") if path.name.endswith(".partial")]


def _gguf(path: Path) -> Path:
    from gguf import GGUFWriter

    writer = GGUFWriter(path, "llama")
    writer.add_tensor("token_embd.weight", torch.zeros(4, 32).numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_out_never_overwrites_the_input(tmp_path: Path, patch: Path) -> None:
    source = _gguf(tmp_path / "model.gguf")
    os.link(source, tmp_path / "hard.gguf")
    (tmp_path / "soft.gguf").symlink_to(source)
    before = snapshot(tmp_path)
    for out in (source, tmp_path / "hard.gguf", tmp_path / "soft.gguf"):
        one_line_error(invoke("patch", "apply", source, patch, "--out", out), "is the input")
    one_line_error(
        invoke("patch", "apply", source, patch, "--out", patch / "x.gguf"), "inside the input"
    )
    assert snapshot(tmp_path) == before


# 2. a full disk


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: room for the tokenizer and the patch copy, not for the weights."""
    place = tmp_path / "small"
    place.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(place)],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        pytest.skip("no mount command to make a small tmpfs with")
    if mounted.returncode:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield place
    finally:
        subprocess.run(["umount", str(place)], check=True)


def test_a_full_disk_is_one_line_naming_the_file_and_leaves_nothing(
    small_disk: Path, tmp_path: Path, model: Path, patch: Path
) -> None:
    before = snapshot(tmp_path)
    out = small_disk / "patched"
    message = one_line_error(
        invoke("patch", "apply", model, patch, "--out", out), "No space left on device"
    )
    assert f"cannot write {out / 'model.safetensors'}" in message
    assert list(small_disk.iterdir()) == []
    assert snapshot(tmp_path) == before


def test_a_file_that_fills_the_disk_is_named_and_removed(small_disk: Path) -> None:
    path = small_disk / "big.bin"
    with pytest.raises(WriteError, match=f"cannot write {path}: No space left on device"):
        with atomic_writer(path, binary=True) as handle:
            handle.write(b"\0" * 200_000)
    assert list(small_disk.iterdir()) == []


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
    # a format that is no string is refused as one, not a crash on an unhashable key
    (patch / MANIFEST_NAME).write_text(json.dumps({**manifest, "format": ["loopfix.patch/3"]}))
    one_line_error(invoke("patch", "inspect", patch), "has format ['loopfix.patch/3']")


# 4. output modes follow the umask


@pytest.mark.parametrize(
    ("umask", "folder", "file"), [(0o022, 0o755, 0o644), (0o027, 0o750, 0o640)]
)
def test_outputs_get_the_umask_modes(
    tmp_path: Path, model: Path, patch: Path, umask: int, folder: int, file: int
) -> None:
    out = tmp_path / "out"
    previous = os.umask(umask)
    try:
        applied = invoke("patch", "apply", model, patch, "--out", out)
        reverted = invoke("patch", "revert", out, patch, "--out", tmp_path / "back")
    finally:
        os.umask(previous)
    assert applied.exit_code == 0 and reverted.exit_code == 0, applied.output
    for root in (out, tmp_path / "back"):
        for path in [root, *root.rglob("*")]:
            expected = folder if path.is_dir() else file
            assert stat.S_IMODE(path.stat().st_mode) == expected, path

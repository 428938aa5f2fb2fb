"""GGUF files (what llama.cpp and Ollama users hold) as ordinary Hugging Face folders.

`converted_folder(path)` follows these steps:
1. hash the file (SHA-256, streamed: about 0.25 s for a 100 MB file, so it is not remembered
   between runs; a (path, size, mtime) index would save that much and could go stale);
2. if the cache already holds a folder for that hash, that folder is the model;
3. else dequantize with transformers (`from_pretrained(..., gguf_file=...)`) in float32, the
   exact values of the quantized weights (a lower dtype is applied when the folder is loaded);
4. clear the quantizer, so the model saves as plain safetensors;
5. save model, tokenizer and generation config into a temporary folder inside the cache and
   rename it into place (`loopfix.atomic.atomic_folder`): a conversion killed at any moment
   leaves no half folder behind. The check for an existing folder and the save hold a lock
   file beside the folder: of two processes converting the same file at once, the second
   uses the first one's folder instead of replacing it under a process that may be loading it.

A file transformers cannot read (an architecture it does not know, a truncated or corrupt
file) raises ModelLoadError naming the file and the problem, and writes nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from loopfix.atomic import OutputError, atomic_folder
from loopfix.models.errors import ModelLoadError

if TYPE_CHECKING:
    from gguf import GGUFReader
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "CACHE_DIR_VARIABLE",
    "GGUF_INSTALL",
    "READ_CHUNK_BYTES",
    "cache_dir",
    "converted_folder",
    "file_sha256",
    "is_gguf",
    "read_gguf",
]

CACHE_DIR_VARIABLE = "LOOPFIX_CACHE_DIR"
"""Environment variable for the cache root (default `~/.cache/loopfix`); converted GGUF files
live under `ROOT/gguf/<sha256>/`."""

GGUF_INSTALL = "pip install 'loopfix[gguf]'"

READ_CHUNK_BYTES = 1 << 20
"""How much of a file one read takes while hashing or copying it."""


def cache_dir() -> Path:
    override = os.environ.get(CACHE_DIR_VARIABLE)
    return Path(override).expanduser() if override else Path.home() / ".cache" / "loopfix"


def is_gguf(path: Path) -> bool:
    return path.suffix.lower() == ".gguf"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(READ_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def converted_folder(path: Path) -> Path:
    """The cached HF folder holding `path` dequantized to float32; converts on first use."""
    if not path.is_file():
        raise ModelLoadError(f"GGUF file {path} does not exist")
    target = cache_dir() / "gguf" / file_sha256(path)
    if (target / "config.json").is_file():
        return target
    read_gguf(path)
    # Everything is read before the cache is touched: a file that fails writes nothing.
    model, tokenizer = _dequantized(path), _tokenizer(path)
    # Cleared so save_pretrained writes plain weights ("quantized with gguf and is not
    # serializable" otherwise) and the saved config does not ask for the quantizer again.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    with _conversion_lock(target):
        # A process converting the same file meanwhile may have saved it first: its folder is
        # kept, not swapped for ours under a process that may be loading it.
        if (target / "config.json").is_file():
            return target
        with atomic_folder(target) as work:
            model.save_pretrained(work)
            model.generation_config.save_pretrained(work)
            tokenizer.save_pretrained(work)
            work.chmod(0o755)  # a temporary folder is the owner's only; the cache may be shared
    return target


@contextmanager
def _conversion_lock(target: Path) -> Iterator[None]:
    """Held while `target` is checked and saved: of two processes converting the same file
    (two commands started together, parallel test workers) the first saves, the second finds
    that folder and uses it."""
    lock = target.with_name(target.name + ".lock")
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = lock.open("a")
    except OSError as error:
        raise OutputError(f"cannot write {lock.parent}: {error.strerror or error}") from error
    with handle:  # closing the file releases the lock, also when the block raises
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def read_gguf(path: Path) -> GGUFReader:
    """The parsed header and tensor table (data memory-mapped); a truncated or corrupt file
    raises ModelLoadError naming it."""
    from gguf import GGUFReader

    if not path.is_file():
        raise ModelLoadError(f"GGUF file {path} does not exist")
    _require_gguf_packages(path)
    try:
        return GGUFReader(path)
    except (ValueError, KeyError, IndexError, OSError, struct.error) as error:
        raise ModelLoadError(
            f"{path} is not a readable GGUF file (truncated or corrupt?): {_first_line(error)}"
        ) from error


def _dequantized(path: Path) -> PreTrainedModel:
    import torch
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, dtype=torch.float32
        )
    except (ValueError, KeyError, IndexError, TypeError, OSError, RuntimeError) as error:
        raise ModelLoadError(f"cannot load GGUF file {path}: {_first_line(error)}") from error


def _tokenizer(path: Path) -> PreTrainedTokenizerBase:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    except (ValueError, KeyError, IndexError, TypeError, OSError, RuntimeError) as error:
        raise ModelLoadError(
            f"cannot load the tokenizer of GGUF file {path}: {_first_line(error)}"
        ) from error


def _require_gguf_packages(path: Path) -> None:
    missing = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
    if missing:
        raise ModelLoadError(
            f"loading GGUF file {path} needs {' and '.join(missing)}: {GGUF_INSTALL}"
        )


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]

"""Atomic outputs: a file or folder appears complete under its name, or not at all.

Everything a verb writes goes to a temporary sibling (same folder, so the rename stays on one
file system), is flushed to disk, and is renamed into place only once complete. An error or a
Ctrl-C part-way removes the temporary and leaves any earlier output untouched. Append-only
record stores are the exception: they fsync each batch and cut a torn last line on reopen.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from loopfix.errors import LoopfixError

__all__ = [
    "OutputError",
    "atomic_folder",
    "atomic_writer",
    "check_output_path",
    "write_json_atomic",
    "write_text_atomic",
]


class OutputError(LoopfixError):
    """An output path that cannot be written, or that would overwrite an input."""


def _file_mode() -> int:
    # mkstemp creates files readable by the owner only; outputs get the usual umask instead.
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def check_output_path(out: Path, *inputs: Path | str, folder: bool = False) -> None:
    """Refuse, before any work, an output that is an input, or of the wrong kind (a file where
    a folder is expected, or the reverse)."""
    out = Path(out)
    for source in inputs:
        source = Path(source)
        if source.exists() and out.exists() and os.path.samefile(out, source):
            raise OutputError(f"output {out} is also an input; write to another path")
    if folder and out.exists() and not out.is_dir():
        raise OutputError(f"--out {out} is a file; it must be a folder (or not exist yet)")
    if not folder and out.is_dir():
        raise OutputError(f"output {out} is a folder; it must be a file path")


@contextmanager
def atomic_writer(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """`with atomic_writer(path) as handle:` writes `path` whole when the block ends."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".partial", dir=path.parent
        )
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from error
    try:
        os.chmod(temporary, _file_mode())
        mode = "wb" if binary else "w"
        encoding = None if binary else "utf-8"
        with os.fdopen(descriptor, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_writer(path) as handle:
        handle.write(text)


def write_json_atomic(path: Path, data: Any, indent: int | None = 1) -> None:
    write_text_atomic(path, json.dumps(data, indent=indent, ensure_ascii=False) + "\n")


@contextmanager
def atomic_folder(path: Path) -> Iterator[Path]:
    """`with atomic_folder(out) as work:` fill `work`; it replaces `out` when the block ends.

    An existing `out` is swapped out and removed only after the new folder is in place.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from error
    try:
        yield work
        if not path.exists():
            os.replace(work, path)
            return
        old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
        os.replace(path, old / path.name)
        try:
            os.replace(work, path)
        except BaseException:
            os.replace(old / path.name, path)
            raise
        finally:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise

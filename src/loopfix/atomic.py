"""Atomic outputs: a file or folder appears complete under its name, or not at all.

Everything a verb writes goes to a temporary sibling (same folder, so the rename stays on one
file system), is flushed to disk, and is renamed into place only once complete. An error or a
Ctrl-C part-way removes the temporary and leaves any earlier output untouched; a write that
fails (a full disk) is one `WriteError` naming the file. Outputs that must only ever be new
(`replace=False`, `check_new_output`) never take the place of anything already there: a file
that exists and a folder that is not empty are refused. Append-only record stores are the
exception: they fsync each batch and cut a torn last line on reopen.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from safetensors import SafetensorError

from loopfix.errors import LoopfixError, one_line

__all__ = [
    "OutputError",
    "WriteError",
    "atomic_folder",
    "atomic_writer",
    "check_new_output",
    "check_output_path",
    "write_json_atomic",
    "write_text_atomic",
    "writing",
]


class OutputError(LoopfixError):
    """An output path that cannot be written, or that would overwrite an input."""


class WriteError(OutputError):
    """Writing an output failed part-way (a full disk, a quota); nothing of it was left."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"cannot write {path}: {reason} (nothing was written)")
        self.path, self.reason = Path(path), reason


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _file_mode() -> int:
    # mkstemp creates files readable by the owner only; outputs get the usual umask instead.
    return 0o666 & ~_umask()


def _folder_mode() -> int:
    return 0o777 & ~_umask()


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


def check_new_output(out: Path, *inputs: Path | str, folder: bool) -> None:
    """Refuse, before any work, an output that could take anything away: one that is an input
    or lies inside one (symbolic links, hard links, bind mounts and `..` included), a file that
    exists, or a folder that is not empty. Pair with `replace=False` writers."""
    out = Path(out)
    check_output_path(out, folder=folder)
    # The deepest part of OUT that exists, then each folder above it: OUT is inside an input
    # exactly when one of them is that input.
    resolved = out.resolve()
    existing = [path for path in (resolved, *resolved.parents) if path.exists()]
    for source in map(Path, inputs):
        if not source.exists():
            continue
        if out.exists() and out.samefile(source):
            raise OutputError(f"--out {out} is the input {source}; write somewhere else")
        if any(os.path.samefile(path, source) for path in existing):
            raise OutputError(f"--out {out} is inside the input {source}; write somewhere else")
    if not os.path.lexists(out):
        return
    if out.is_symlink() or not folder:
        raise OutputError(f"--out {out} exists; give a new path (nothing is ever overwritten)")
    if any(out.iterdir()):
        raise OutputError(
            f"--out {out} is a folder that is not empty; give a new or empty folder (nothing "
            "in it is ever deleted)"
        )


def _reason(error: BaseException) -> str:
    """What went wrong, in words: "No space left on device"."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    # safetensors words an I/O error as "... I/O error: No space left on device (os error 28)"
    found = re.search(r"os error (\d+)", str(error))
    return os.strerror(int(found.group(1))) if found else one_line(str(error))


def _blamed(error: BaseException, path: Path) -> WriteError | None:
    """`error` as the failure to write `path`, or None when it names another file itself (an
    input that cannot be read)."""
    if isinstance(error, WriteError):
        return error
    if isinstance(error, OSError) and error.filename is not None:
        return None
    return WriteError(path, _reason(error))


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Blame `path` for a write that fails in the block without naming its file (safetensors,
    `save_pretrained`, a plain `write` never do)."""
    try:
        yield
    except (OSError, SafetensorError) as error:
        blamed = _blamed(error, path)
        if blamed is None:
            raise
        raise blamed from error


@contextmanager
def atomic_writer(path: Path, *, binary: bool = False, replace: bool = True) -> Iterator[IO[Any]]:
    """`with atomic_writer(path) as handle:` writes `path` whole when the block ends; with
    `replace=False` a `path` that exists by then is refused, not replaced."""
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
        # The check and the rename are not one step; the caller checked long before, this
        # catches a file that appeared during the write.
        if not replace and os.path.lexists(path):
            raise OutputError(f"{path} appeared while it was written; it was left as it is")
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        if error.filename not in (None, temporary):
            raise  # another file's error (an input that cannot be read): it names itself
        raise WriteError(path, _reason(error)) from error
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str, *, replace: bool = True) -> None:
    with atomic_writer(path, replace=replace) as handle:
        handle.write(text)


def write_json_atomic(path: Path, data: Any, indent: int | None = 1) -> None:
    write_text_atomic(path, json.dumps(data, indent=indent, ensure_ascii=False) + "\n")


def _in_folder(error: BaseException, work: Path, path: Path) -> WriteError | None:
    """A failure to write into `work` as one naming the file's place under `path` (`path`
    itself when the error names no file); None for an error about a file elsewhere."""
    if isinstance(error, OSError) and error.filename is not None:
        error = WriteError(Path(os.fsdecode(error.filename)), _reason(error))
    blamed = _blamed(error, work)
    if blamed is None or not blamed.path.is_relative_to(work):
        return None
    return WriteError(path / blamed.path.relative_to(work), blamed.reason)


@contextmanager
def atomic_folder(path: Path, *, replace: bool = True) -> Iterator[Path]:
    """`with atomic_folder(out) as work:` fill `work`; it becomes `out` when the block ends.

    An existing `out` is swapped out and removed only after the new folder is in place; with
    `replace=False` `out` must not exist or be empty, and nothing already in it is ever removed
    (a rename does not take the place of a folder that is not empty).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    except OSError as error:
        raise OutputError(f"cannot write {path}: {error.strerror or error}") from error
    try:
        yield work
    except (OSError, SafetensorError, WriteError) as error:
        shutil.rmtree(work, ignore_errors=True)
        blamed = _in_folder(error, work, path)
        if blamed is None:
            raise
        raise blamed from error
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    try:
        _usual_modes(work)
        _into_place(work, path, replace)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _usual_modes(work: Path) -> None:
    """Give the folder and everything in it the modes the umask gives new files: mkdtemp makes
    the folder the owner's only, and transformers' save_pretrained does the same to weights."""
    work.chmod(_folder_mode())
    for path in work.rglob("*"):
        if not path.is_symlink():
            path.chmod(_folder_mode() if path.is_dir() else _file_mode())


def _into_place(work: Path, path: Path, replace: bool) -> None:
    if not replace:
        try:
            os.rename(work, path)
        except OSError as error:
            raise OutputError(
                f"--out {path} is not empty or not a folder (something was written there "
                "meanwhile); it was left as it is"
            ) from error
        return
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

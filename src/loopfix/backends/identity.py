"""Which weights a backend runs: the SHA-256 of each file of the model's folder, and the id of
a patch applied to them in memory.

A file whose size and mtime equal a stored fingerprint's is not hashed again, so checking a
large model on resume costs a `stat`, not a read. A hub id is fingerprinted from its local
cache; a served model (openai) has no files here, and is known by name only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from loopfix.models import file_sha256, resolve_model_path

__all__ = ["ModelFile", "ModelIdentity", "model_files", "model_folder"]


@dataclass(frozen=True)
class ModelFile:
    """One file of a model's folder, as scan.json's `model_files` holds it."""

    size: int
    mtime_ns: int
    sha256: str

    def to_json(self) -> dict[str, JsonValue]:
        return {"size": self.size, "mtime_ns": self.mtime_ns, "sha256": self.sha256}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ModelFile:
        size, mtime_ns, sha256 = data["size"], data["mtime_ns"], data["sha256"]
        if not (isinstance(size, int) and isinstance(mtime_ns, int) and isinstance(sha256, str)):
            raise ValueError(f"not a model file's fingerprint: {dict(data)!r}")
        return cls(size, mtime_ns, sha256)


@dataclass(frozen=True)
class ModelIdentity:
    """The weights a backend generates with.

    files: {file name: fingerprint} of the model's folder (model cards left out); None when the
        model has no local files (a server, or a hub id not downloaded yet).
    patch: the id of a weight patch applied in memory over those files (a hash of the patch's
        content); None for the files as they are.
    """

    files: dict[str, ModelFile] | None
    patch: str | None = None

    def hashes(self) -> dict[str, str] | None:
        """{file name: SHA-256}: what decides whether two identities are the same weights."""
        return None if self.files is None else {n: f.sha256 for n, f in self.files.items()}


def model_folder(model: str) -> Path | None:
    """The local folder holding `model`'s files (a hub id: its cache, once downloaded)."""
    path = Path(resolve_model_path(model))  # an unknown testbed or folder fails here
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure means "not in the local cache"
        return None


def model_files(
    model: str, known: Mapping[str, ModelFile] | None = None
) -> dict[str, ModelFile] | None:
    """The fingerprint of `model`'s folder, or None when it has no local files; a file whose
    size and mtime equal `known`'s entry keeps that entry's hash."""
    folder = model_folder(model)
    if folder is None:
        return None
    known = known or {}
    files: dict[str, ModelFile] = {}
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.name.startswith(".") or path.suffix == ".md":
            continue
        stat = path.stat()  # follows the hub cache's symlinks to the blobs
        previous = known.get(path.name)
        if previous is not None and (previous.size, previous.mtime_ns) == (
            stat.st_size,
            stat.st_mtime_ns,
        ):
            files[path.name] = previous
        else:
            files[path.name] = ModelFile(stat.st_size, stat.st_mtime_ns, file_sha256(path))
    return files

"""A scan run's identity: every setting, the suite's content and the model's files.

`DIR/scan.json` holds it. A later run into DIR resumes only when all three match, so one store
never mixes two models, two versions of a suite file or two settings. The model's fingerprint is
the SHA-256 of each file of its folder (weights, config, tokenizer); a file whose size and mtime
are the ones stored is not hashed again, so resuming a large model costs a `stat`, not a read.
A hub id is fingerprinted from its local cache; a served model (openai backend) by name only.

Records without an identity (no scan.json, or one from before content hashes) are never adopted:
the run is refused with how to start fresh.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from loopfix.atomic import write_json_atomic
from loopfix.models import file_sha256, resolve_model_path
from loopfix.scan.config import ConfigMismatchError, ScanConfig
from loopfix.suites import SuiteItem

__all__ = [
    "check_run_identity",
    "model_files",
    "record_run_identity",
    "run_identity",
    "suite_sha256",
]

_START_FRESH = "move it away or choose another --out to start fresh"


def suite_sha256(items: list[SuiteItem]) -> str:
    """SHA-256 of the items a run prompts with (ids, prompts, answers, checkers)."""
    text = json.dumps([item.to_dict() for item in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _model_folder(config: ScanConfig) -> Path | None:
    if config.backend == "openai":
        return None
    path = Path(resolve_model_path(config.model))  # an unknown testbed or folder fails here
    if path.is_dir():
        return path
    try:  # a hub id: its files once downloaded (a first run before download has none yet)
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(config.model, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure means "not in the local cache"
        return None


def model_files(config: ScanConfig, known: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """{file name: {size, mtime_ns, sha256}} of the model's folder (model cards excluded), or
    None when the model has no local files. `known` (a stored fingerprint) skips rehashing a
    file whose size and mtime are unchanged."""
    folder = _model_folder(config)
    if folder is None:
        return None
    known = known or {}
    files: dict[str, Any] = {}
    for path in sorted(folder.iterdir()):
        if not path.is_file() or path.name.startswith(".") or path.suffix == ".md":
            continue
        stat = path.stat()  # follows the hub cache's symlinks to the blobs
        entry: dict[str, Any] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        previous = known.get(path.name)
        if isinstance(previous, dict) and all(previous.get(k) == v for k, v in entry.items()):
            entry["sha256"] = previous["sha256"]
        else:
            entry["sha256"] = file_sha256(path)
        files[path.name] = entry
    return files


def run_identity(
    config: ScanConfig, items: list[SuiteItem], known: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "config": config.identity(),
        "suite_sha256": suite_sha256(items),
        "model_files": model_files(config, known),
    }


def _read_stored(path: Path) -> dict[str, Any]:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConfigMismatchError(
            f"{path} is damaged ({error}), so the records beside it cannot be matched to this "
            f"run; {_START_FRESH}"
        ) from None
    if not isinstance(stored, dict) or not {"config", "suite_sha256", "model_files"} <= set(stored):
        raise ConfigMismatchError(
            f"{path} predates content-keyed resume (no suite or model hashes), so its records "
            f"cannot be matched to this model and suite; {_START_FRESH}"
        )
    return stored


def _hashes(files: dict[str, Any] | None) -> dict[str, str] | None:
    return None if files is None else {name: entry["sha256"] for name, entry in files.items()}


def _differences(stored: dict[str, Any], identity: dict[str, Any]) -> list[str]:
    old, new = stored["config"], identity["config"]
    changed = [
        f"{key}: {old.get(key)!r} there, {new.get(key)!r} now"
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]
    if stored["suite_sha256"] != identity["suite_sha256"]:
        changed.append("the suite's prompts differ (the suite file was edited?)")
    before, now = _hashes(stored["model_files"]), _hashes(identity["model_files"])
    if before != now:
        names = sorted(
            name
            for name in (before or {}).keys() | (now or {}).keys()
            if (before or {}).get(name) != (now or {}).get(name)
        )
        changed.append(f"the model's files differ ({', '.join(names) or 'none stored'})")
    return changed


def check_run_identity(
    config: ScanConfig, items: list[SuiteItem], out: Path, has_records: bool
) -> dict[str, Any]:
    """The run's identity; refuse a different or missing one once records exist (a run that
    failed before storing anything is simply replaced). `record_run_identity` writes it once the
    model has loaded, so a model that fails to load leaves no scan.json."""
    path = out / "scan.json"
    if not has_records:
        return run_identity(config, items)
    if not path.is_file():
        raise ConfigMismatchError(
            f"{out} holds records but no scan.json: which model, suite and settings made them "
            f"is unknown, so they are not resumed; {_START_FRESH}"
        )
    stored = _read_stored(path)
    identity = run_identity(config, items, stored["model_files"])
    changed = _differences(stored, identity)
    if changed:
        raise ConfigMismatchError(
            f"{out} already holds a scan of another model, suite or configuration "
            f"({'; '.join(changed)}). Rerun with the same options to resume it, or choose "
            "another --out."
        )
    if identity["model_files"] != stored["model_files"]:  # same contents, new mtimes: remember
        write_json_atomic(path, identity)
    return identity


def record_run_identity(config: ScanConfig, out: Path, identity: dict[str, Any]) -> None:
    """After the backend loaded, write scan.json; a hub model first seen by this run has files
    now, so their fingerprint joins it (a resume compares them: a run never keeps an unknown
    model)."""
    files = identity["model_files"] if identity["model_files"] is not None else model_files(config)
    write_json_atomic(out / "scan.json", {**identity, "model_files": files})

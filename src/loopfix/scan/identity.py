"""A scan run's identity: every setting, the suite's content and the weights that ran.

`DIR/scan.json` holds it. A later run into DIR resumes only when all three match, so one store
never mixes two models, two versions of a suite file or two settings. The weights are what the
backend reports (`Backend.identity`): the SHA-256 of each file of the model's folder (weights,
config, tokenizer; `loopfix.backends.identity`), and the id of a patch applied in memory when
there is one (scan.json's `patch`, absent otherwise). Settings and suite are checked before the
backend opens, the weights once it has.

Records without an identity (no scan.json, or one from before content hashes) are never adopted:
the run is refused with how to start fresh.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from loopfix.atomic import write_json_atomic
from loopfix.backends.base import Backend
from loopfix.backends.identity import ModelFile, ModelIdentity
from loopfix.scan.config import ConfigMismatchError, ScanConfig
from loopfix.suites import SuiteItem

__all__ = ["RunIdentity", "check_run_identity", "record_run_identity", "suite_sha256"]

_START_FRESH = "move it away or choose another --out to start fresh"


def suite_sha256(items: list[SuiteItem]) -> str:
    """SHA-256 of the items a run prompts with (ids, prompts, answers, checkers)."""
    text = json.dumps([item.to_dict() for item in items], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class RunIdentity:
    """scan.json: the settings that decide the records, the suite's hash, the weights."""

    config: Mapping[str, JsonValue]
    suite_sha256: str
    model: ModelIdentity

    def to_json(self) -> dict[str, JsonValue]:
        files = self.model.files
        data: dict[str, JsonValue] = {
            "config": dict(self.config),
            "suite_sha256": self.suite_sha256,
            "model_files": None
            if files is None
            else {name: file.to_json() for name, file in files.items()},
        }
        if self.model.patch is not None:
            data["patch"] = self.model.patch
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, JsonValue]) -> RunIdentity:
        """Raises KeyError / ValueError / TypeError on what is not a scan identity."""
        config, suite, files, patch = (
            data["config"],
            data["suite_sha256"],
            data["model_files"],
            data.get("patch"),
        )
        if not isinstance(config, dict) or not isinstance(suite, str):
            raise ValueError("config must be an object and suite_sha256 a string")
        if not (files is None or isinstance(files, dict)) or not (
            patch is None or isinstance(patch, str)
        ):
            raise ValueError("model_files must be an object or null, patch a string")
        weights = None
        if files is not None:
            weights = {name: ModelFile.from_json(_object(entry)) for name, entry in files.items()}
        return cls(config, suite, ModelIdentity(weights, patch))


def _object(value: JsonValue) -> Mapping[str, JsonValue]:
    if not isinstance(value, dict):
        raise ValueError(f"not an object: {value!r}")
    return value


def _read_stored(path: Path) -> RunIdentity:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConfigMismatchError(
            f"{path} is damaged ({error}), so the records beside it cannot be matched to this "
            f"run; {_START_FRESH}"
        ) from None
    try:
        return RunIdentity.from_json(stored)
    except (AttributeError, KeyError, TypeError, ValueError):
        raise ConfigMismatchError(
            f"{path} predates content-keyed resume (no suite or model hashes), so its records "
            f"cannot be matched to this model and suite; {_START_FRESH}"
        ) from None


def _refuse(out: Path, changed: list[str]) -> None:
    if changed:
        raise ConfigMismatchError(
            f"{out} already holds a scan of another model, suite or configuration "
            f"({'; '.join(changed)}). Rerun with the same options to resume it, or choose "
            "another --out."
        )


def check_run_identity(
    config: ScanConfig, items: list[SuiteItem], out: Path, has_records: bool
) -> RunIdentity | None:
    """Before the backend opens: the identity stored beside `out`'s records (None when there
    are none: a run that failed before storing anything is simply replaced), refusing another
    configuration or suite, or records without an identity."""
    path = out / "scan.json"
    if not has_records:
        return None
    if not path.is_file():
        raise ConfigMismatchError(
            f"{out} holds records but no scan.json: which model, suite and settings made them "
            f"is unknown, so they are not resumed; {_START_FRESH}"
        )
    stored = _read_stored(path)
    old, new = stored.config, config.identity()
    changed = [
        f"{key}: {old.get(key)!r} there, {new.get(key)!r} now"
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]
    if stored.suite_sha256 != suite_sha256(items):
        changed.append("the suite's prompts differ (the suite file was edited?)")
    _refuse(out, changed)
    return stored


def record_run_identity(
    config: ScanConfig,
    items: list[SuiteItem],
    out: Path,
    backend: Backend,
    stored: RunIdentity | None,
) -> None:
    """Once the backend has opened (so a model that fails to load leaves no scan.json): refuse
    weights other than the `stored` ones, then write scan.json (a hub model first seen by this
    run has files now, and a file touched since keeps its hash under its new mtime)."""
    weights = backend.identity(None if stored is None else stored.model.files)
    if stored is not None:
        before, now = stored.model.hashes(), weights.hashes()
        changed = []
        if before != now:
            names = sorted(
                name
                for name in (before or {}).keys() | (now or {}).keys()
                if (before or {}).get(name) != (now or {}).get(name)
            )
            changed.append(f"the model's files differ ({', '.join(names) or 'none stored'})")
        if stored.model.patch != weights.patch:
            changed.append(f"the patch differs ({stored.model.patch} there, {weights.patch} now)")
        _refuse(out, changed)
    identity = RunIdentity(config.identity(), suite_sha256(items), weights)
    write_json_atomic(out / "scan.json", identity.to_json())

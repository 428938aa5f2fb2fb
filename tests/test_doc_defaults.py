"""Defaults and derived values the docs state are the code's own: each is read from the doc and
compared with the settings model or function that defines it (a default lives in one place; the
doc is checked against it, never a second copy). Fast: no generation."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from loopfix.consistency.config import ConsistencyConfig
from loopfix.detect import DetectConfig
from loopfix.guards.registry import GUARDS
from loopfix.lab.config import TrainConfig
from loopfix.scan import ScanConfig
from loopfix.scan.detection import paper_ngram
from loopfix.serve.config import ServeConfig

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CHECKPOINTS = ROOT / "src" / "loopfix" / "lab" / "checkpoints"
GUARD_ROW = re.compile(
    r"^\| (`[a-z-]+\.[a-z_]+`(?: / `[a-z_]+`)*) \| (`[^|]+`(?: / `[^|]+`)*) \|", re.M
)
# `field` (value) in prose, and [--flag value] in a command synopsis
PROSE_DEFAULT = re.compile(r"`([a-z_]+)` \(([0-9][0-9.]*)\)")
SYNOPSIS_DEFAULT = re.compile(r"\[--([a-z-]+) ([0-9][0-9.,]*)\]")
# doc -> the settings models whose defaults its prose and synopses state
DOC_MODELS: dict[str, tuple[type[BaseModel], ...]] = {
    "serve.md": (ServeConfig, DetectConfig),
    "consistency.md": (ConsistencyConfig,),
    "scan.md": (ScanConfig,),
}


def doc_text(name: str) -> str:
    return " ".join((DOCS / name).read_text().split())  # one line: a value may wrap


def cell_value(text: str) -> Any:
    """A table cell's value as JSON reads it (None spelled as in Python), else the bare word."""
    try:
        return json.loads(text.replace("None", "null"))
    except json.JSONDecodeError:
        return text


def documented_guard_defaults() -> dict[str, Any]:
    """'guard.parameter' -> the value in docs/guards.md's parameter table; in a row
    `a.x` / `y` the later names belong to guard a too."""
    defaults = {}
    for names, values in GUARD_ROW.findall((DOCS / "guards.md").read_text()):
        name_list = [name.strip("`") for name in names.split(" / ")]
        value_list = [value.strip("`") for value in values.split(" / ")]
        guard = name_list[0].split(".")[0]
        for name, value in zip(name_list, value_list, strict=True):
            defaults[name if "." in name else f"{guard}.{name}"] = cell_value(value)
    return defaults


def plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def test_the_guards_parameter_table_is_the_guards_defaults() -> None:
    declared = {
        f"{guard}.{name}": plain(field.get_default(call_default_factory=True))
        for guard, cls in GUARDS.items()
        for name, field in cls.Params.model_fields.items()
    }
    documented = documented_guard_defaults()
    assert sorted(documented) == sorted(declared)  # every parameter has its row, no stale row
    for key, value in declared.items():
        assert documented[key] == value, key


@pytest.mark.parametrize("doc", DOC_MODELS)
def test_defaults_stated_in_prose_and_synopses_are_the_settings_fields(doc: str) -> None:
    text = doc_text(doc)
    stated = [(field, value) for field, value in PROSE_DEFAULT.findall(text)]
    stated += [(flag.replace("-", "_"), value) for flag, value in SYNOPSIS_DEFAULT.findall(text)]
    checked = 0
    for name, value in stated:
        model = next((m for m in DOC_MODELS[doc] if name in m.model_fields), None)
        if model is None:  # a bench script's flag, not a setting
            continue
        default = plain(model.model_fields[name].get_default(call_default_factory=True))
        expected = [float(v) for v in value.split(",")] if "," in value else float(value)
        actual = [float(v) for v in default] if isinstance(default, list) else float(default)
        assert actual == expected, (doc, name)
        checked += 1
    assert checked >= 1, doc  # the doc does state defaults: the patterns still find them


def test_the_paper_metric_examples_in_scan_md_are_what_the_scan_uses() -> None:
    text = doc_text("scan.md")
    examples = re.search(r"Cap (\d+ -> \(\d+, \d+\)(?:; [\d,]+ -> \(\d+, \d+\))*)", text)
    assert examples is not None
    pairs = re.findall(r"([\d,]+) -> \((\d+), (\d+)\)", examples.group(1))
    assert len(pairs) >= 3
    for cap, n, k in pairs:
        assert paper_ngram(int(cap.replace(",", ""))) == (int(n), int(k)), cap


def test_the_testbed_recipe_in_testbed_md_is_the_training_config() -> None:
    text, config = doc_text("testbed.md"), TrainConfig()
    for stated in (
        f"hidden {config.hidden_size}, {config.layers} layers, {config.heads} heads of size "
        f"{config.head_dim}, MLP {config.intermediate_size}",
        f"{config.arms} arms of {config.depth} nodes",
        f"{100 * config.loop_fraction:g}% of walks degenerate",
        f"verbatim to {config.loop_cap} tokens",
        f"{config.warmup_steps} warm-up steps",
        f"over {config.steps} steps, batch {config.batch_size} fresh walks",
        f"seed {config.seed}",
    ):
        assert stated in text, stated


def test_the_bundled_checkpoint_numbers_in_testbed_md_are_their_training_records() -> None:
    text = doc_text("testbed.md")
    default, clean = (
        json.loads((CHECKPOINTS / name / "training.json").read_text())
        for name in ("stargraph", "stargraph-clean")
    )
    assert f"A {round(default['parameters'] / 1000)}k-parameter" in text
    assert f"Realised share: {100 * default['looping_walk_share']:.2f}%" in text
    minutes = [round(record["train_seconds"] / 60) for record in (default, clean)]
    assert f"took {minutes[0]} min (`stargraph`) and {minutes[1]} min (`stargraph-clean`" in text


def test_every_source_docs_claims_md_names_exists() -> None:
    text = (DOCS / "claims.md").read_text()
    files = set(re.findall(r"`(?:\S+ )*((?:tests|bench|scripts)/[\w/]+\.\w+)", text))
    assert len(files) >= 10
    for file in files:
        assert (ROOT / file).is_file(), file
    for file, test in re.findall(r"(tests/[\w/]+\.py)::(test_\w+)", text):
        assert f"def {test}(" in (ROOT / file).read_text(), (file, test)

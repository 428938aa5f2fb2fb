"""Every CLI option that sets a settings-model field has that field's default and description:
a default lives in one place."""

from pathlib import Path
from typing import Literal

import pytest
import typer
from pydantic import BaseModel, TypeAdapter

from loopfix.cli import app
from loopfix.cli.options import cli_default, is_list, list_value
from loopfix.repair.config import PRESET_FIELDS, RepairConfig
from loopfix.scan.config import ScanConfig
from loopfix.scan.guard_config import CompareConfig

# (verb, option) pairs whose default differs from the field's on purpose
OWN_DEFAULTS = {("compare", "out")}  # a directory of scans, not one scan

VERBS: dict[str, tuple[type[BaseModel], ...]] = {
    "scan": (ScanConfig,),
    "compare": (CompareConfig, ScanConfig),
    "repair": (RepairConfig,),
}


@pytest.mark.parametrize("verb", VERBS)
def test_cli_defaults_and_help_are_the_config_fields(verb: str) -> None:
    command = typer.main.get_command(app).commands[verb]  # type: ignore[attr-defined]
    checked = 0
    for param in command.params:
        model = next((m for m in VERBS[verb] if param.name in m.model_fields), None)
        if model is None or param.param_type_name != "option" or (verb, param.name) in OWN_DEFAULTS:
            continue
        field = model.model_fields[param.name]
        if model is RepairConfig and param.name in PRESET_FIELDS:
            # Left out, the preset the command picks fills it: the help names both defaults.
            assert param.default is None, param.name
            if field.default is not None:  # (a None default's description says what it means)
                assert f"default: {cli_default(field)} on the testbed" in (param.help or "")
            assert field.description and field.description in (param.help or ""), param.name
            checked += 1
            continue
        value = param.default
        if is_list(field) and isinstance(value, str):
            value = list_value(value)
        parsed = TypeAdapter(field.annotation).validate_python(value)
        assert parsed == field.get_default(call_default_factory=True), (verb, param.name)
        if param.name != "think":
            assert field.description and field.description in (param.help or ""), param.name
        checked += 1
    assert checked >= 5  # the verb's options do come from its settings model


def test_a_refused_value_is_one_line_naming_the_flag() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["scan", "loopfix:stargraph", "--samples", "0"])
    assert result.exit_code == 2
    assert "--samples: Input should be greater than or equal to 1" in result.output


@pytest.mark.parametrize(
    ("flags", "preset", "given"),
    [
        ([], "testbed", {}),
        (["--suite", "arith"], "suite", {"suite": "arith"}),
        (["--prompts", "60"], "testbed", {"prompts": 60}),
        (["--suite", "arith", "--ks", "4"], "suite", {"suite": "arith", "ks": (4,)}),
    ],
)
def test_repair_builds_the_preset_of_its_source(
    flags: list[str],
    preset: Literal["testbed", "suite"],
    given: dict[str, object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`loopfix repair` starts from TESTBED, or from SUITE with --suite or --records; an option
    given replaces the preset's value, and the primary temperature is always verified."""
    from typer.testing import CliRunner

    import loopfix.repair

    built: list[RepairConfig] = []

    def stop(model: str, out: Path, config: RepairConfig, **_: object) -> None:
        built.append(config)
        raise SystemExit(0)

    monkeypatch.setattr(loopfix.repair, "run_repair", stop, raising=False)
    out = str(tmp_path / "out")
    result = CliRunner().invoke(app, ["repair", "loopfix:stargraph", "--out", out, *flags])
    assert result.exit_code == 0, result.output
    assert built == [RepairConfig.preset(preset, **given)]
    suite = RepairConfig.preset("suite", suite="arith", temperature=1.0)
    assert (suite.search, suite.ks, suite.temperatures) == ("linear", (8, 32, 64), (0.0, 0.6, 1.0))
    assert RepairConfig.preset("testbed") == RepairConfig()

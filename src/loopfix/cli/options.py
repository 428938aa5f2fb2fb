"""CLI options made from the settings models' fields, so a default and its help live only there.

`option(ScanConfig, "samples")` is a typer option whose default is the field's default and whose
help is the field's description plus its bounds. List fields become one comma-separated option
("0,0.6,1.0"). `build(ScanConfig, values)` turns the parsed options back into the model, and
leaves a refused value to the root command, which reports it as one line naming the flag.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

import annotated_types
import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from loopfix.cli.common import parse_list

__all__ = ["build", "cli_default", "field_help", "flag", "is_list", "list_value", "option"]

_BOUNDS = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def is_list(field: FieldInfo) -> bool:
    annotation = field.annotation
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    return get_origin(annotation) in (list, tuple)


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def cli_default(field: FieldInfo) -> Any:
    """The field's default as the command line writes it (a list as "a,b,c")."""
    default = field.get_default(call_default_factory=True)
    if is_list(field) and default is not None:
        return ",".join(_number(value) for value in default)
    return default


def field_help(field: FieldInfo) -> str:
    bounds = [
        f"{symbol} {_number(getattr(item, attribute))}"
        for item in field.metadata
        for kind, attribute, symbol in _BOUNDS
        if isinstance(item, kind)
    ]
    text = field.description or ""
    if is_list(field):
        text += " (comma-separated)"
    return text + (f" [{', '.join(bounds)}]" if bounds else "")


def option(model: type[BaseModel], name: str, *flags: str, help: str | None = None) -> Any:
    """A typer option for `model`'s field `name`: its default, its description and bounds."""
    field = model.model_fields[name]
    return typer.Option(cli_default(field), *flags, help=help or field_help(field))


def list_value(text: str) -> list[int | float | str]:
    """A comma list option's elements as what each reads as (see `_scalar`)."""
    return [_scalar(part) for part in parse_list(text)]


def _scalar(text: str) -> int | float | str:
    """One element of a comma list as what it reads as: "8" -> 8, "0.6" -> 0.6, "dry" -> "dry"
    (so a whole-number field refuses "1.5" instead of rounding it)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def option_values(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, object]:
    """The parsed options as `model`'s field values (comma lists split)."""
    return {
        name: list_value(value)
        if isinstance(value, str) and is_list(model.model_fields[name])
        else value
        for name, value in values.items()
    }


def build(model: type[BaseModel], values: Mapping[str, Any]) -> Any:
    """`model` from the parsed options (comma lists split); a refused value is a pydantic
    ValidationError, which the command line's root prints as one line naming the flag."""
    return model.model_validate(option_values(model, values))

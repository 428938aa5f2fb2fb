"""Guard names, their parameters, and `parse_guards("rescue+dry", {"dry.multiplier": 0.8})`.

Every mistake is a `GuardError` that names the guard and the parameter; nothing falls back to a
silent default. Guards in a chain always run in the canonical order below (penalties, bans,
watches, then temperatures), so "dry+adaptive-temp" and "adaptive-temp+dry" are one chain.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from pydantic import ValidationError

from loopfix.guards.adaptive_temp import AdaptiveTempGuard
from loopfix.guards.args import GuardArg
from loopfix.guards.base import Guard, GuardContext, GuardError, GuardParams
from loopfix.guards.chain import GuardChain
from loopfix.guards.cut import CutGuard
from loopfix.guards.dry import DryGuard
from loopfix.guards.dynamic import DynamicPenaltyGuard
from loopfix.guards.entropy_temp import EntropyTempGuard
from loopfix.guards.ngram import NgramGuard
from loopfix.guards.penalty import PenaltyGuard
from loopfix.guards.phase_temp import PhaseTempGuard
from loopfix.guards.rescue import RescueGuard
from loopfix.guards.think_budget import ThinkBudgetGuard

__all__ = [
    "GUARDS",
    "build_chain",
    "guard_names",
    "inline_args",
    "parse_guard_args",
    "parse_guards",
    "split_guard_args",
    "validate_params",
]

GUARDS: dict[str, type[Guard]] = {
    guard.name: guard
    for guard in (
        PenaltyGuard,
        DynamicPenaltyGuard,
        DryGuard,
        NgramGuard,
        RescueGuard,
        CutGuard,
        ThinkBudgetGuard,
        EntropyTempGuard,
        AdaptiveTempGuard,
        PhaseTempGuard,
    )
}
NONE = "none"


def inline_args(spec: str) -> tuple[str, dict[str, GuardArg]]:
    """A spec whose guards carry their own arguments, "rescue[escape=think_end]+dry" or
    "think-budget[tokens=200;low=50]", as the plain spec and its "guard.parameter" arguments
    (values JSON when they parse, else text), so one comparison can hold two settings of one
    guard."""
    plain: list[str] = []
    args: dict[str, GuardArg] = {}
    for part in spec.split("+"):
        name, bracket, inside = part.strip().partition("[")
        plain.append(name.strip())
        if not bracket:
            continue
        if not inside.endswith("]"):
            raise GuardError(f"guard spec {spec!r}: {part.strip()!r} must end with ']'")
        items = [item for item in inside[:-1].split(";") if item.strip()]
        args |= parse_guard_args(f"{name.strip()}.{item.strip()}" for item in items)
    return "+".join(plain), args


def guard_names(spec: str) -> list[str]:
    """The guards of a spec ("rescue+dry"), in canonical order; "none" is the empty chain."""
    names = [part.strip() for part in spec.split("+") if part.strip()]
    if not names:
        raise GuardError(f"empty guard spec {spec!r}; use 'none' for no guard")
    if names == [NONE]:
        return []
    for name in names:
        if name not in GUARDS:
            known = ", ".join([NONE, *GUARDS])
            raise GuardError(f"unknown guard {name!r} in {spec!r}; known guards: {known}")
    if len(set(names)) != len(names):
        raise GuardError(f"guard spec {spec!r} names a guard twice")
    return [name for name in GUARDS if name in names]


def validate_params(name: str, args: Mapping[str, GuardArg]) -> GuardParams:
    """The parameters of guard `name` from `args`; a GuardError names any bad one."""
    if name not in GUARDS:
        raise GuardError(f"unknown guard {name!r}; known guards: {', '.join(GUARDS)}")
    params_type = GUARDS[name].Params
    for key in args:
        if key not in params_type.model_fields:
            known = ", ".join(params_type.model_fields)
            raise GuardError(f"guard {name!r} has no parameter {key!r}; its parameters: {known}")
    try:
        return params_type(**args)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "parameters"
        raise GuardError(
            f"guard {name!r}, parameter {where!r}: {first['msg']} (got {first.get('input')!r})"
        ) from None


def split_guard_args(guard_args: Mapping[str, GuardArg]) -> dict[str, dict[str, GuardArg]]:
    """{"dry.multiplier": 0.8} -> {"dry": {"multiplier": 0.8}}."""
    split: dict[str, dict[str, GuardArg]] = {}
    for key, value in guard_args.items():
        name, dot, parameter = key.partition(".")
        if not dot or not parameter:
            raise GuardError(f"guard argument {key!r} must look like GUARD.PARAMETER")
        split.setdefault(name, {})[parameter] = value
    return split


def parse_guard_args(items: Iterable[str]) -> dict[str, GuardArg]:
    """CLI pairs ["dry.multiplier=0.8", "dry.breakers=[\\"\\\\n\\"]"] -> {key: value}.

    Values are JSON when they parse as JSON, else plain strings.
    """
    parsed: dict[str, GuardArg] = {}
    for item in items:
        key, equals, text = item.partition("=")
        if not equals:
            raise GuardError(f"guard argument {item!r} must look like GUARD.PARAMETER=VALUE")
        try:
            parsed[key.strip()] = json.loads(text)
        except json.JSONDecodeError:
            parsed[key.strip()] = text
    return parsed


def spec_args(
    spec: str, guard_args: Mapping[str, GuardArg] | None
) -> tuple[list[str], dict[str, dict[str, GuardArg]]]:
    """The guards `spec` names and `guard_args` split by guard; an argument for a guard the spec
    does not name is a GuardError (a typo must not be a silent default)."""
    names = guard_names(spec)
    by_guard = split_guard_args(guard_args or {})
    for name in by_guard:
        if name not in names:
            raise GuardError(
                f"argument for guard {name!r}, which is not in {spec!r} "
                f"({', '.join(by_guard[name])})"
            )
    return names, by_guard


def parse_guards(
    spec: str,
    guard_args: Mapping[str, GuardArg] | None = None,
    context: GuardContext | None = None,
    *,
    rollback: bool = True,
) -> GuardChain:
    """Build the chain `spec` names, with `guard_args` ("guard.parameter" -> value).

    rollback: whether the driver can roll sequences back (HF loop: yes; vLLM: no), which
        decides how `rescue` escapes a loop.
    """
    names, by_guard = spec_args(spec, guard_args)
    params = {name: validate_params(name, by_guard.get(name, {})) for name in names}
    return build_chain(params, context, rollback=rollback)


def build_chain(
    params: Mapping[str, GuardParams],
    context: GuardContext | None = None,
    *,
    rollback: bool = True,
) -> GuardChain:
    """The chain of already validated guards (name -> parameters, in canonical order)."""
    guards: list[Guard] = []
    for name, own in params.items():
        if name == RescueGuard.name:
            guards.append(RescueGuard(own, context, rollback=rollback))
        else:
            guards.append(GUARDS[name](own, context))
    return GuardChain(guards)

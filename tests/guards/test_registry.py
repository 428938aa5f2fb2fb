import re

import pytest

from loopfix import guards
from loopfix.guards import GUARDS, GuardContext, GuardError, parse_guard_args, parse_guards


def test_exports_match_all() -> None:
    assert sorted(guards.__all__) == sorted(
        name for name in dir(guards) if not name.startswith("_") and name in guards.__all__
    )
    for name in guards.__all__:
        assert hasattr(guards, name)


def test_none_is_the_empty_chain() -> None:
    chain = parse_guards("none")
    assert not chain and chain.spec == "none"


def test_guards_compose_in_canonical_order_with_their_arguments() -> None:
    chain = parse_guards("adaptive-temp+rescue+dry", {"dry.multiplier": 0.5}, GuardContext(8))
    assert chain.names == ["dry", "rescue", "adaptive-temp"]
    assert chain.guards[0].params.multiplier == 0.5
    assert parse_guards("dry+adaptive-temp").names == parse_guards("adaptive-temp+dry").names


@pytest.mark.parametrize(
    ("spec", "args", "message"),
    [
        ("dyr", {}, r"unknown guard 'dyr'"),
        ("dry+dry", {}, r"names a guard twice"),
        ("", {}, r"empty guard spec"),
        ("dry", {"dry.mult": 1.0}, r"guard 'dry' has no parameter 'mult'"),
        ("dry", {"dry.multiplier": -1}, r"guard 'dry', parameter 'multiplier'.*-1"),
        ("dry", {"ngram.size": 3}, r"argument for guard 'ngram', which is not in 'dry'"),
        ("dry", {"multiplier": 3}, r"must look like GUARD.PARAMETER"),
        ("adaptive-temp", {"adaptive-temp.low": 3.0}, r"guard 'adaptive-temp'.*low"),
    ],
)
def test_mistakes_name_the_guard_and_the_parameter(spec: str, args: dict, message: str) -> None:
    with pytest.raises(GuardError, match=message):
        parse_guards(spec, args)


def test_cli_arguments_parse_as_json_or_text() -> None:
    parsed = parse_guard_args(
        ["dry.multiplier=0.8", 'dry.breakers=["\\n"]', "phase-temp.mode=position"]
    )
    assert parsed == {"dry.multiplier": 0.8, "dry.breakers": ["\n"], "phase-temp.mode": "position"}
    with pytest.raises(GuardError, match="GUARD.PARAMETER=VALUE"):
        parse_guard_args(["dry.multiplier"])


def test_every_guard_has_described_parameters() -> None:
    for name, guard in GUARDS.items():
        for field_name, field in guard.Params.model_fields.items():
            assert field.description, f"{name}.{field_name} lacks a description"


def test_a_guard_may_carry_its_own_arguments_in_the_spec() -> None:
    from loopfix.backends import GuardSpec

    shared = {"rescue.escape": "ban", "dry.multiplier": 0.8}
    spec = GuardSpec.parse("rescue[escape=think_end]+dry", shared, shared=True)
    assert spec.spec == "dry+rescue"
    assert spec.params["rescue"].escape == "think_end"  # its own argument wins
    assert spec.params["dry"].multiplier == 0.8
    plain = GuardSpec.parse("rescue", shared, shared=True)
    assert plain.params["rescue"].escape == "ban"
    budget = GuardSpec.parse("think-budget[tokens=200; low=50]")
    assert (budget.params["think-budget"].tokens, budget.params["think-budget"].low) == (200, 50)
    assert budget.args == {"think-budget.tokens": 200, "think-budget.low": 50}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("rescue[escape=think_end", "must end with"),
        ("rescue[escapes=think_end]", "no parameter 'escapes'"),
        ("think-budget[tokens=0]", "'think-budget', parameter 'tokens'"),
        ("rescue[escape]", "GUARD.PARAMETER=VALUE"),
    ],
)
def test_a_bad_inline_argument_names_the_guard(spec: str, message: str) -> None:
    from loopfix.backends import GuardSpec

    with pytest.raises(GuardError, match=re.escape(message)):
        GuardSpec.parse(spec)

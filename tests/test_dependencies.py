"""Every package that src/ imports comes with the runtime install, or is a requirement of one of
loopfix's extras (whose absence the code reports by name). Issue 37: the repair imported scipy,
which only the test tools brought along, so the README's main command died after 17 minutes on
a fresh clone while CI stayed green. Imports inside functions count as much as module-level ones.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the check itself needs no older Python

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_closure() -> set[str]:
    """The runtime requirements and, recursively, what they require without any extra."""
    pending = [Requirement(text).name for text in PROJECT["dependencies"]]
    seen: set[str] = set()
    while pending:
        name = normalized(pending.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            needs = requires(name) or []
        except PackageNotFoundError:
            continue
        for text in needs:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return seen


def extra_requirements() -> set[str]:
    """The packages the optional extras name directly (the test tools' `dev` excluded)."""
    return {
        normalized(Requirement(text).name)
        for extra, texts in PROJECT["optional-dependencies"].items()
        if extra != "dev"
        for text in texts
    }


def imported_modules(source: Path) -> dict[str, str]:
    """Top-level module -> one place that imports it, for every absolute import under `source`."""
    found: dict[str, str] = {}
    for path in sorted(source.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], f"{path.relative_to(source)}:{node.lineno}")
    return found


def undeclared_imports(source: Path) -> list[str]:
    allowed = runtime_closure() | extra_requirements()
    distributions = packages_distributions()
    undeclared = []
    for module, place in imported_modules(source).items():
        # _typeshed: the type checker's own stubs, imported only under TYPE_CHECKING
        if module in ("loopfix", "_typeshed") or module in sys.stdlib_module_names:
            continue
        # A module not installed here (vllm lives in .venv-vllm) is judged by its own name.
        names = {normalized(name) for name in distributions.get(module, [module])}
        if not names & allowed:
            undeclared.append(f"{module} ({place}; distribution {', '.join(sorted(names))})")
    return undeclared


def test_every_import_is_a_runtime_requirement_or_an_extra() -> None:
    undeclared = undeclared_imports(ROOT / "src")
    assert not undeclared, "imported but neither required at runtime nor an extra: " + "; ".join(
        undeclared
    )


def test_an_import_inside_a_function_of_a_package_nobody_requires_is_found(tmp_path: Path) -> None:
    """The repair's interval as issue 37 found it: scipy, imported where it was used."""
    (tmp_path / "verification.py").write_text(
        "def interval():\n    from scipy.stats import t\n\n    return t.ppf(0.975, 3)\n"
    )
    assert undeclared_imports(tmp_path) == ["scipy (verification.py:2; distribution scipy)"]

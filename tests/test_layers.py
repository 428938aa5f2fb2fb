"""The layer contract: docs/architecture.md's package table says, in its "may import" column,
which of loopfix's packages each package may import; this test holds src/loopfix to it, so the
page IS the contract (issue 38). Change the table, with a sentence saying why, to allow an arrow.

What counts as an import of one of ours:
- every `import` and `from ... import` statement anywhere in a module: at module level, inside
  functions and classes, and under `if TYPE_CHECKING:` (a type is a dependency too, and a
  checker follows it); relative imports are resolved;
- a module named as a string in a `lazy_exports(...)` table (loopfix.lazy), since that is an
  import made on first use.
The layer check and the cycle check both apply to all of them (issue 56). An import inside a
function runs later than one at module level, but the two modules still need each other: two
modules that import each other, at any depth, are one piece of code split in two files, and a
function-level import is how such a circle hid. A `lazy_exports` table counts as well: it is an
import made on first use, like one inside a function; a package's table names only its own
modules, so it closes a circle only when one of them takes a name from the package's facade,
where importing the defining module is the fix. A module name computed at run time
(`importlib.import_module(name)`) is not seen.

A package or top-level module that has no row in the table fails the test with a message that
asks for its row, so a new package (such as an `engine/` moved out of `backends/`) is placed in
the layers before it can merge.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src"
DOC = ROOT / "docs" / "architecture.md"
# A "may import" cell that contains this phrase marks a row every package may import.
ANY_PACKAGE = "any package may import"
EVERYTHING = "everything"


@dataclass(frozen=True)
class Contract:
    """unit -> the names it may import (dotted, under loopfix); `everyone`: imported by all."""

    allowed: dict[str, frozenset[str]]
    everyone: frozenset[str]
    unrestricted: frozenset[str]


def unit_of(module: str) -> str:
    """The table row a dotted module belongs to: its top-level package, its own top-level
    module name, or `__init__` for loopfix itself."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def read_contract(text: str) -> Contract:
    section = text.split("## Packages", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    column = header.index("may import")
    allowed: dict[str, frozenset[str]] = {}
    everyone: set[str] = set()
    unrestricted: set[str] = set()
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        units = [
            name.removesuffix("/").removesuffix(".py")
            for name in re.findall(r"`([^`]+)`", cells[0])
        ]
        cell = cells[column]
        if cell.lower().startswith(EVERYTHING):
            unrestricted.update(units)
        if ANY_PACKAGE in cell.lower():
            everyone.update(units)
        # "(pure Python)", "(detection, seeds)": notes; after ";": a remark on the row
        names = re.sub(r"\([^)]*\)", "", cell).replace("`", "").split(";")[0].strip()
        if names.lower() in ("nothing of ours", "—", "-") or names.lower().startswith(EVERYTHING):
            names = ""
        targets = frozenset(name.strip() for name in names.split(",") if name.strip())
        for name in targets:
            assert re.fullmatch(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*", name), (
                f"docs/architecture.md: {cells[0]} may import {name!r}, not a package name"
            )
        for unit in units:
            assert unit not in allowed, f"docs/architecture.md: `{unit}` has two rows"
            allowed[unit] = targets
    return Contract(allowed, frozenset(everyone), frozenset(unrestricted))


@dataclass(frozen=True)
class Import:
    source: str  # dotted module that imports
    target: str  # dotted module imported
    line: int


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def exists(module: str, root: Path) -> bool:
    path = root.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def lazy_targets(tree: ast.Module) -> list[tuple[str, int]]:
    """Module names given as strings to `lazy_exports(package, {name: module})`."""
    assigned = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "lazy_exports"
            and len(node.args) == 2
        ):
            table = node.args[1]
            if isinstance(table, ast.Name):
                table = assigned.get(table.id, table)
            assert isinstance(table, ast.Dict), (
                f"line {node.lineno}: lazy_exports needs a literal dict"
            )
            for value in table.values:
                assert isinstance(value, ast.Constant) and isinstance(value.value, str)
                found.append((value.value, node.lineno))
    return found


def imports_of(root: Path) -> list[Import]:
    """Every import of a loopfix module by a loopfix module under `root` (a `src` folder)."""
    found: list[Import] = []
    for path in sorted((root / "loopfix").rglob("*.py")):
        source = module_name(path, root)
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                # `from loopfix.lab import stargraph` imports the module loopfix.lab.stargraph
                targets = [
                    f"{module}.{alias.name}" if exists(f"{module}.{alias.name}", root) else module
                    for alias in node.names
                ]
            else:
                continue
            for target in dict.fromkeys(targets):
                if target == "loopfix" or target.startswith("loopfix."):
                    found.append(Import(source, target, node.lineno))
        for target, line in lazy_targets(tree):
            found.append(Import(source, target, line))
    return found


def layer_violations(root: Path, contract: Contract) -> list[str]:
    units = {
        unit_of(module_name(path, root))
        for path in (root / "loopfix").glob("*")
        if path.suffix == ".py" or (path / "__init__.py").is_file()
    }
    problems = [
        f"loopfix/{unit}: no row in docs/architecture.md's package table; add one that says "
        "what it may import"
        for unit in sorted(units - contract.allowed.keys())
    ]
    for unit, targets in sorted(contract.allowed.items()):
        for target in sorted(targets):
            if not exists(f"loopfix.{target}", root):
                problems.append(
                    f"docs/architecture.md: `{unit}` may import `{target}`, which does not exist"
                )
    for item in imports_of(root):
        unit = unit_of(item.source)
        target_unit = unit_of(item.target)
        if unit == target_unit or unit not in contract.allowed or unit in contract.unrestricted:
            continue
        if target_unit in contract.everyone:
            continue
        allowed = contract.allowed[unit]
        relative = item.target.removeprefix("loopfix").removeprefix(".") or "__init__"
        if any(relative == name or relative.startswith(name + ".") for name in allowed):
            continue
        path = item.source.replace(".", "/")
        problems.append(
            f"{path}:{item.line} imports {item.target}: `{unit}` may not import `{target_unit}`"
        )
    return problems


def cycles(root: Path) -> list[list[str]]:
    """The import cycles among modules, over all imports; each as its modules, sorted."""
    graph: dict[str, set[str]] = {}
    for item in imports_of(root):
        if item.target != item.source:
            graph.setdefault(item.source, set()).add(item.target)
    # Tarjan's strongly connected components; a component of two or more modules is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for neighbour in sorted(graph.get(node, ())):
            if neighbour not in index:
                visit(neighbour)
                low[node] = min(low[node], low[neighbour])
            elif neighbour in on_stack:
                low[node] = min(low[node], index[neighbour])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_every_import_follows_the_layer_table() -> None:
    problems = layer_violations(SOURCE, read_contract(DOC.read_text()))
    assert not problems, "against docs/architecture.md's layers:\n" + "\n".join(problems)


def test_the_table_is_a_layering() -> None:
    """The arrows of the table itself form no cycle (a dotted name counts as its package), so
    the packages can be drawn in layers, each importing only below itself."""
    contract = read_contract(DOC.read_text())
    graph = {
        unit: {name.split(".")[0] for name in names} - {unit}
        for unit, names in contract.allowed.items()
    }
    done: set[str] = set()

    def visit(unit: str, path: list[str]) -> None:
        assert unit not in path, "docs/architecture.md's arrows cycle: " + " -> ".join(
            [*path[path.index(unit) :], unit]
        )
        if unit not in done:
            for target in sorted(graph.get(unit, ())):
                visit(target, [*path, unit])
            done.add(unit)

    for unit in sorted(graph):
        visit(unit, [])


def test_no_import_cycle() -> None:
    found = cycles(SOURCE)
    arrows = [
        f"{item.source.replace('.', '/')}:{item.line} imports {item.target}"
        for item in imports_of(SOURCE)
        for cycle in found
        if item.source in cycle and item.target in cycle and item.source != item.target
    ]
    assert not found, (
        "import cycles: " + "; ".join(" <-> ".join(c) for c in found) + ("\n" + "\n".join(arrows))
    )


TABLE = """## Packages

| package | one job | may import |
|---|---|---|
| `low/` | below | nothing of ours |
| `high/` | above | low, `mid.pure` (pure Python) |
| `mid/` | between | low |
| `errors.py` | errors | nothing of ours; any package may import them |
| `__init__.py` | the public API | everything (lazily) |
"""


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"loopfix/__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_table_is_read_as_the_contract() -> None:
    contract = read_contract(TABLE)
    assert contract.allowed["high"] == {"low", "mid.pure"}
    assert contract.allowed["low"] == frozenset()
    assert contract.everyone == {"errors"}
    assert contract.unrestricted == {"__init__"}


def test_an_upward_import_inside_a_function_and_a_package_without_a_row_fail(
    tmp_path: Path,
) -> None:
    root = tree(
        tmp_path,
        {
            "loopfix/errors.py": "",
            "loopfix/low/__init__.py": "import loopfix.errors\n",
            "loopfix/low/a.py": "def f():\n    from loopfix.mid import b\n",
            "loopfix/mid/__init__.py": "",
            "loopfix/mid/b.py": "from ..low import a\n",
            "loopfix/mid/pure.py": "",
            "loopfix/high/__init__.py": "from loopfix.mid import pure\nimport loopfix.low\n",
            "loopfix/engine/__init__.py": "",
        },
    )
    contract = read_contract(TABLE)
    assert layer_violations(root, contract) == [
        "loopfix/engine: no row in docs/architecture.md's package table; add one that says what "
        "it may import",
        "loopfix/low/a:2 imports loopfix.mid.b: `low` may not import `mid`",
    ]


def test_a_cycle_through_type_checking_a_function_or_a_lazy_table_counts(
    tmp_path: Path,
) -> None:
    root = tree(
        tmp_path,
        {
            "loopfix/a.py": "import typing\nif typing.TYPE_CHECKING:\n    import loopfix.b\n",
            "loopfix/b.py": "from loopfix import a\n",
            "loopfix/c.py": "def f():\n    from loopfix import d\n",
            "loopfix/d.py": "import loopfix.c\n",
            "loopfix/p/__init__.py": "lazy_exports(__name__, {'E': 'loopfix.p.e'})\n",
            "loopfix/p/e.py": "from loopfix.p import F\n",
            "loopfix/q.py": "def f():\n    import loopfix.a\n",
        },
    )
    assert cycles(root) == [
        ["loopfix.a", "loopfix.b"],
        ["loopfix.c", "loopfix.d"],
        ["loopfix.p", "loopfix.p.e"],
    ]

"""Resolve a `--suite` spec (a built-in name or a JSON-lines file) into items."""

from __future__ import annotations

from pathlib import Path

from loopfix.suites.builtin import BUILTIN_SUITES
from loopfix.suites.items import SuiteError, SuiteItem, read_suite_file

__all__ = ["DEFAULT_SUITE_SIZE", "load_suite"]

DEFAULT_SUITE_SIZE = 50


def load_suite(spec: str, n: int | None = None, seed: int = 0) -> list[SuiteItem]:
    """Items of a built-in suite (`n` generated from `seed`) or of a file (its first `n`)."""
    if spec in BUILTIN_SUITES:
        return BUILTIN_SUITES[spec](DEFAULT_SUITE_SIZE if n is None else n, seed)
    path = Path(spec).expanduser()
    if not path.is_file():
        names = ", ".join(BUILTIN_SUITES)
        raise SuiteError(f"suite {spec!r} is neither a built-in suite ({names}) nor a file")
    items = read_suite_file(path)
    return items if n is None else items[:n]

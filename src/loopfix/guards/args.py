"""The value of one guard argument as given, before the guard checks it (no torch here: the
settings models that carry guard arguments are read by the CLI before any model loads)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["GuardArg"]

# One guard parameter's value as given ("dry.breakers" -> ["\n"]: a `--guard-arg` parsed as
# JSON, a config value, a vLLM extra arg), before the guard's `Params` checks it.
GuardArg = bool | int | float | str | Sequence[str] | Sequence[int] | None

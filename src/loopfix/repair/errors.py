"""The one error a repair raises for input it cannot repair from."""

from __future__ import annotations

from loopfix.errors import LoopfixError

__all__ = ["RepairInputError"]


class RepairInputError(LoopfixError, ValueError):
    """A model that is not a star-graph testbed given without a suite, records of another model
    or suite, or records without loops to build branches from."""

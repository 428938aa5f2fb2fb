"""The one error every way of loading a model raises for a spec it cannot turn into a model."""

from __future__ import annotations

from loopfix.errors import LoopfixError

__all__ = ["ModelLoadError"]


class ModelLoadError(LoopfixError, OSError):
    """A model spec names no folder, GGUF file, bundled model or reachable hub model, or the
    file it names cannot be loaded."""

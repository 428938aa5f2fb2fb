"""loopfix: measure, explain and fix generation loops in language models."""

__version__ = "0.1.0"

__all__ = ["__version__"]

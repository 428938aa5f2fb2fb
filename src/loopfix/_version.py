"""loopfix's version, defined once: pyproject.toml reads it (`[tool.setuptools.dynamic]`), and
`loopfix.__version__`, the report footer and the run manifests import it from here."""

__version__ = "0.1.0"

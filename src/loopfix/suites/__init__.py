"""Prompt suites: the JSON-lines format, answer checkers, built-in suites and prompt rendering."""

from loopfix.suites.builtin import BUILTIN_SUITES, arith_suite, sequence_suite, stargraph_suite
from loopfix.suites.checkers import check_answer
from loopfix.suites.items import SuiteError, SuiteItem, read_suite_file
from loopfix.suites.load import load_suite

__all__ = [
    "BUILTIN_SUITES",
    "SuiteError",
    "SuiteItem",
    "arith_suite",
    "check_answer",
    "load_suite",
    "read_suite_file",
    "sequence_suite",
    "stargraph_suite",
]

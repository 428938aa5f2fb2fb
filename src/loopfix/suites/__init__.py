"""Prompt suites: the JSON-lines format, answer checkers, built-in suites and prompt rendering."""

from loopfix.suites.builtin import BUILTIN_SUITES, arith_suite, sequence_suite, stargraph_suite
from loopfix.suites.checkers import answer_part, check_answer, last_boxed, last_number
from loopfix.suites.items import CHECKERS, SuiteError, SuiteItem, parse_item, read_suite_file
from loopfix.suites.load import DEFAULT_SUITE_SIZE, load_suite
from loopfix.suites.render import prompt_ids, supports_thinking

__all__ = [
    "BUILTIN_SUITES",
    "CHECKERS",
    "DEFAULT_SUITE_SIZE",
    "SuiteError",
    "SuiteItem",
    "answer_part",
    "arith_suite",
    "check_answer",
    "last_boxed",
    "last_number",
    "load_suite",
    "parse_item",
    "prompt_ids",
    "read_suite_file",
    "sequence_suite",
    "stargraph_suite",
    "supports_thinking",
]

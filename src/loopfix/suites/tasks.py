"""The `tasks` suite: short list tasks a 135M chat model can do, and loops on.

Every item asks for one exact list, in four families: `count` (count from A to B), `repeat`
(write a word K times, numbered), `copy` (copy a list made of a short pattern repeated) and
`days` (the days of the week from one day to another). The correct answer itself repeats
structure ("1. cat / 2. cat / 3. cat", "12, 30, 12, 30"), so a guard that bans repetition can
be caught breaking it, and the typical failure is a run-on: the model writes the list and does
not stop (counting past B, the week around again). Items are generated from `--seed` and `--n`
(item `index` of seed `s` depends on (s, index) only, so a smaller `--n` is a prefix of a
larger one); families take turns (item i has family `FAMILIES[i % 4]`), and the family is in
the id (`tasks-FAMILY-SEED-INDEX`) and in `meta.family`.

The prompts are chats, `count` and `days` with one worked example as an earlier turn. The
families and the wording were chosen on seeds 0-2 and reported on seed 100, never looked at
while choosing (docs/suites-tasks.md, with the families that were tried and dropped).

The `tasks` checker (`check_task`) is exact about content and lenient about format: it reads
the answer as a list (lines, commas, semicolons, "and"; bullets and "1." numbering stripped; on
a line, an intro up to a colon, such as "The list is:", dropped), keeps the entries that are
items of the family's kind (a whole number for `count`, a day name for `days`, one word or
number for `repeat` and `copy`; longer prose is ignored) and wants exactly the expected items,
in order, from an answer that ended by itself. So a correct list followed by more items is
wrong, and so is an answer cut at the token limit: the user asked for a list that stops, and a
run-on that swallowed the answer did not give it (a guard that makes the model stop there
recovers it).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping

from loopfix.suites.items import SuiteItem

__all__ = [
    "FAMILIES",
    "check_task",
    "family_of",
    "item_of",
    "list_items",
    "starts_with_answer",
    "task_item",
    "tasks_suite",
]

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_WORDS = ("apple", "blue", "hello", "tree", "star", "cat", "yes", "moon", "rain", "book", "fish")
_COPY_WORDS = ("red", "blue", "green", "cat", "dog", "sun", "one", "two", "up", "down", "tea")

Chat = list[dict[str, str]]
# A family makes (examples as (question, answer) pairs, the question, the expected items).
Maker = Callable[[random.Random], tuple[list[tuple[str, str]], str, list[str]]]


def _chat(examples: list[tuple[str, str]], question: str) -> Chat:
    messages: Chat = []
    for asked, answered in examples:
        messages += [{"role": "user", "content": asked}, {"role": "assistant", "content": answered}]
    return [*messages, {"role": "user", "content": question}]


def _count(rng: random.Random) -> tuple[list[tuple[str, str]], str, list[str]]:
    start = rng.randint(1, 40)
    stop = start + rng.randint(4, 12)
    examples = [("Count from 3 to 9.", "3, 4, 5, 6, 7, 8, 9")]
    return examples, f"Count from {start} to {stop}.", [str(k) for k in range(start, stop + 1)]


def _repeat(rng: random.Random) -> tuple[list[tuple[str, str]], str, list[str]]:
    word, times = rng.choice(_WORDS), rng.randint(2, 7)
    return [], f'Write "{word}" {times} times, numbered from 1 to {times}.', [word] * times


def _copy(rng: random.Random) -> tuple[list[tuple[str, str]], str, list[str]]:
    # A short pattern repeated: the answer repeats structure by construction.
    if rng.random() < 0.5:
        pattern = [str(number) for number in rng.sample(range(1, 31), rng.randint(2, 3))]
    else:
        pattern = rng.sample(_COPY_WORDS, rng.randint(2, 3))
    items = pattern * rng.randint(2, 3)
    return [], f"Copy this list exactly: {', '.join(items)}", items


def _days(rng: random.Random) -> tuple[list[tuple[str, str]], str, list[str]]:
    first, count = rng.randrange(7), rng.randint(2, 6)
    examples = [
        ("List the days of the week from Tuesday to Thursday.", "Tuesday, Wednesday, Thursday")
    ]
    items = [DAYS[(first + k) % 7] for k in range(count)]
    question = f"List the days of the week from {items[0]} to {items[-1]}."
    return examples, question, items


_MAKERS: dict[str, Maker] = {
    "count": _count,
    "repeat": _repeat,
    "copy": _copy,
    "days": _days,
}
FAMILIES: tuple[str, ...] = tuple(_MAKERS)


def task_item(seed: int, index: int) -> SuiteItem:
    """Item `index` of the suite of `seed` (it depends on these two only)."""
    family = FAMILIES[index % len(FAMILIES)]
    examples, question, expected = _MAKERS[family](random.Random(f"tasks:{seed}:{index}"))
    return SuiteItem(
        id=f"tasks-{family}-{seed}-{index}",
        messages=_chat(examples, question),
        answer=", ".join(expected),
        checker="tasks",
        meta={"family": family, "items": expected},
    )


def tasks_suite(n: int, seed: int) -> list[SuiteItem]:
    return [task_item(seed, index) for index in range(n)]


def family_of(prompt_id: str) -> str:
    """The family of a `tasks` item from its id (`tasks-FAMILY-SEED-INDEX`)."""
    return prompt_id.split("-")[1]


def item_of(prompt_id: str) -> SuiteItem:
    """The `tasks` item a prompt id names, regenerated from its seed and index."""
    _, _, seed, index = prompt_id.split("-")
    return task_item(int(seed), int(index))


# --- the checker ---------------------------------------------------------------------------

_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\))\s+")
_SPLIT = re.compile(r"[,;]|\band\b|\bthen\b")


def _clean(entry: str) -> str:
    # A marker can also start an entry inside a line: "1. red, 2. up, 3. red".
    entry = _MARKER.sub("", entry.replace("**", "")).strip().strip("\"'`“”‘’").strip()
    return entry.rstrip(".!").strip().casefold()


def list_items(text: str) -> list[str]:
    """The entries of a text read as a list, cleaned and case-folded: one per line, comma,
    semicolon or "and"; list markers ("-", "*", "1.", "2)") stripped at the start of a line
    and of an entry ("1. red, 2. up"); on a line with a colon followed by a space or the
    line's end, only what follows the last such colon (an intro like "Here are the numbers
    from 3 to 7:" or a label like "Cat:"). An entry whose whitespace-separated words are all
    single items ("dog dog dog") is not split here; the checker splits it when every word is
    an item."""
    entries = []
    for line in text.splitlines():
        line = _MARKER.sub("", line)
        parts = re.split(r":(?:\s|$)", line)
        line = parts[-1]
        entries += [cleaned for part in _SPLIT.split(line) if (cleaned := _clean(part))]
    return entries


def _is_item(family: str) -> Callable[[str], bool]:
    """Whether a cleaned entry is an item of the family's kind (prose is not)."""
    if family == "count":
        return str.isdigit
    if family == "days":
        return {day.casefold() for day in DAYS}.__contains__
    # repeat, copy: one word or number (an intro or a comment is longer than one word)
    return lambda entry: entry.isalnum()


def _items_of_kind(entries: list[str], family: str, expected: list[str]) -> list[str]:
    """The entries that are items of the family's kind. An entry made only of expected items
    separated by spaces ("dog dog dog", "3 4 5") counts as those items."""
    is_item, vocabulary = _is_item(family), set(expected)
    found = []
    for entry in entries:
        if is_item(entry):
            found.append(entry)
        elif (words := entry.split()) and all(word in vocabulary for word in words):
            found += words
    return found


def _found_and_expected(text: str, meta: Mapping[str, object]) -> tuple[list[str], list[str]]:
    family, items = meta.get("family"), meta.get("items")
    assert isinstance(family, str) and isinstance(items, list)  # parse_item checked them
    expected = [str(item).casefold() for item in items]
    return _items_of_kind(list_items(text), family, expected), expected


def check_task(text: str, meta: Mapping[str, object], stopped: bool) -> bool:
    """Whether `text` gives exactly the list `meta["items"]` of family `meta["family"]` and
    then stops (see the module docstring)."""
    if not stopped:
        return False
    found, expected = _found_and_expected(text, meta)
    return found == expected


def starts_with_answer(text: str, meta: Mapping[str, object]) -> bool:
    """Whether the items of `text` begin with the whole expected list (what follows aside):
    the run-on that `check_task` rejects wrote the answer first, so a guard that stopped it
    there would have recovered it."""
    found, expected = _found_and_expected(text, meta)
    return found[: len(expected)] == expected

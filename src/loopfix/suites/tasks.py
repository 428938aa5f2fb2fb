"""The `tasks` suite: short list tasks a 135M chat model can do, and loops on.

Every item asks for one exact list (count from A to B, write a word K times, copy a list, the
days of the week from a given day, the letters from X to Y, a small multiplication table). The
correct answer itself repeats structure ("dog, dog, dog", "2 x 1 = 2 / 2 x 2 = 4 / ..."), so a
guard that bans repetition can be caught breaking it, and the typical failure is a run-on: the
model writes the list and does not stop (counting past B, the word forever). Items are generated
from `--seed` and `--n` (item `index` of seed `s` depends on (s, index) only, so a smaller `--n`
is a prefix of a larger one); families take turns (item i has family `FAMILIES[i % 6]`), and
the family is in the id (`tasks-FAMILY-SEED-INDEX`) and in `meta.family`.

The prompts are chats: one or two worked examples as earlier turns, then the question. The
wording and the examples were chosen on seeds 0-2 and reported on seed 100 (docs/suites-tasks.md).

The `tasks` checker (`check_task`) is exact about content and lenient about format: it reads
the answer as a list (lines, commas, semicolons, "and"; bullets and "1." numbering stripped; an
intro up to a colon, such as "Here are the numbers:", dropped), keeps the entries that look like
items of the family (a whole number, a day name, a letter, the asked word, an "a x b = c" line;
other prose is ignored) and wants exactly the expected items, in order, from an answer that
ended by itself. So a correct list followed by more items is wrong, and so is an answer cut at
the token limit: the user asked for a list that stops, and a run-on that swallowed the answer
did not give it (a guard that makes the model stop there recovers it).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from loopfix.suites.items import SuiteItem

__all__ = ["FAMILIES", "check_task", "family_of", "list_items", "tasks_suite"]

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
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
    examples = [
        ("Count from 3 to 9.", "3, 4, 5, 6, 7, 8, 9"),
        ("Count from 11 to 14.", "11, 12, 13, 14"),
    ]
    return examples, f"Count from {start} to {stop}.", [str(k) for k in range(start, stop + 1)]


def _repeat(rng: random.Random) -> tuple[list[tuple[str, str]], str, list[str]]:
    word, times = rng.choice(_WORDS), rng.randint(2, 8)
    examples = [
        ('Write the word "dog" 3 times.', "dog, dog, dog"),
        ('Write the word "sun" 5 times.', "sun, sun, sun, sun, sun"),
    ]
    return examples, f'Write the word "{word}" {times} times.', [word] * times


def _copy(rng: random.Random) -> tuple[list[tuple[str, str]], str, list[str]]:
    # A short pattern repeated: the answer repeats structure by construction.
    pattern = rng.sample(_COPY_WORDS, rng.randint(2, 3))
    items = pattern * rng.randint(2, 4)
    return [], f"Copy this list exactly: {', '.join(items)}", items


def _days(rng: random.Random) -> tuple[list[tuple[str, str]], str, list[str]]:
    first, count = rng.randrange(7), rng.randint(3, 7)
    examples = [
        ("List 3 days of the week, starting from Tuesday.", "Tuesday, Wednesday, Thursday"),
        (
            "List 5 days of the week, starting from Friday.",
            "Friday, Saturday, Sunday, Monday, Tuesday",
        ),
    ]
    items = [DAYS[(first + k) % 7] for k in range(count)]
    return examples, f"List {count} days of the week, starting from {DAYS[first]}.", items


def _letters(rng: random.Random) -> tuple[list[tuple[str, str]], str, list[str]]:
    first = rng.randrange(18)
    last = min(first + rng.randint(3, 8), 25)
    examples = [
        ("Write the letters from B to E.", "B, C, D, E"),
        ("Write the letters from J to P.", "J, K, L, M, N, O, P"),
    ]
    question = f"Write the letters from {LETTERS[first]} to {LETTERS[last]}."
    return examples, question, list(LETTERS[first : last + 1])


def _table(rng: random.Random) -> tuple[list[tuple[str, str]], str, list[str]]:
    base, upto = rng.choice((2, 3, 4, 5, 10)), rng.randint(3, 8)
    examples = [
        (
            "Write the multiplication table of 2 up to 2 x 4.",
            "2 x 1 = 2\n2 x 2 = 4\n2 x 3 = 6\n2 x 4 = 8",
        ),
        (
            "Write the multiplication table of 10 up to 10 x 6.",
            "\n".join(f"10 x {k} = {10 * k}" for k in range(1, 7)),
        ),
    ]
    question = f"Write the multiplication table of {base} up to {base} x {upto}."
    return examples, question, [f"{base} x {k} = {base * k}" for k in range(1, upto + 1)]


_MAKERS: dict[str, Maker] = {
    "count": _count,
    "repeat": _repeat,
    "copy": _copy,
    "days": _days,
    "letters": _letters,
    "table": _table,
}
FAMILIES: tuple[str, ...] = tuple(_MAKERS)


def tasks_suite(n: int, seed: int) -> list[SuiteItem]:
    items = []
    for index in range(n):
        family = FAMILIES[index % len(FAMILIES)]
        rng = random.Random(f"tasks:{seed}:{index}")
        examples, question, expected = _MAKERS[family](rng)
        items.append(
            SuiteItem(
                id=f"tasks-{family}-{seed}-{index}",
                messages=_chat(examples, question),
                answer=", ".join(expected) if family != "table" else "\n".join(expected),
                checker="tasks",
                meta={"family": family, "items": expected},
            )
        )
    return items


def family_of(prompt_id: str) -> str:
    """The family of a `tasks` item from its id (`tasks-FAMILY-SEED-INDEX`)."""
    return prompt_id.split("-")[1]


# --- the checker ---------------------------------------------------------------------------

_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\))\s+")
_SPLIT = re.compile(r"[,;]|\band\b|\bthen\b")
_EQUATION = re.compile(r"^(\d+)\s*(?:x|×|\*|times)\s*(\d+)\s*=\s*(\d+)$")


def _clean(entry: str) -> str:
    entry = entry.replace("**", "").strip().strip("\"'`“”‘’").strip()
    return entry.rstrip(".!").strip().casefold()


def list_items(text: str) -> list[str]:
    """The entries of a text read as a list, cleaned and case-folded: one per line, comma,
    semicolon or "and"; list markers ("-", "*", "1.", "2)") stripped; on a line with a colon
    followed by a space or the line's end, only what follows the last such colon (an intro
    like "Here are the numbers from 3 to 7:" or a label like "Cat:"). An entry whose
    whitespace-separated words are all single items ("dog dog dog") is not split here; the
    checker splits it when every word is an item."""
    entries = []
    for line in text.splitlines():
        line = _MARKER.sub("", line)
        parts = re.split(r":(?:\s|$)", line)
        line = parts[-1]
        entries += [cleaned for part in _SPLIT.split(line) if (cleaned := _clean(part))]
    return entries


def _normal_equation(entry: str) -> str | None:
    found = _EQUATION.match(entry)
    return None if found is None else f"{found[1]} x {found[2]} = {found[3]}"


def _items_of_kind(entries: list[str], family: str, expected: list[str]) -> list[str]:
    """The entries that are items of the family's kind, normalized."""
    if family == "table":
        return [eq for entry in entries if (eq := _normal_equation(entry)) is not None]
    if family == "count":
        is_item: Callable[[str], bool] = str.isdigit
    elif family == "days":
        names = {day.casefold() for day in DAYS}
        is_item = names.__contains__
    elif family == "letters":
        is_item = lambda entry: len(entry) == 1 and entry.isalpha()  # noqa: E731
    else:  # repeat, copy: the words the list is made of (prose is longer than one word)
        words = {item.casefold() for item in expected}
        is_item = words.__contains__
    found = []
    for entry in entries:
        if is_item(entry):
            found.append(entry)
        elif (words := entry.split()) and all(map(is_item, words)):
            found += words  # "dog dog dog", "3 4 5"
    return found


def check_task(text: str, meta: dict[str, Any], stopped: bool) -> bool:
    """Whether `text` gives exactly the list `meta["items"]` of family `meta["family"]` and
    then stops (see the module docstring)."""
    if not stopped:
        return False
    expected = [str(item).casefold() for item in meta["items"]]
    return _items_of_kind(list_items(text), meta["family"], expected) == expected


# --- per-family results --------------------------------------------------------------------


def family_rows(samples: list[Any]) -> list[dict[str, Any]]:
    """Per family and temperature (then "all" families): samples, successes, loops, cuts, and
    `loops_recoverable`: loops whose prompt is answered correctly by some other sample of
    `samples` (another temperature or sampling seed), i.e. loops that cost an answer the model
    can give. `samples` are `loopfix.records.Sample`s of `tasks` items."""
    from loopfix.scan.summary import is_loop  # here: loopfix.scan imports the suites

    solved = {sample.prompt_id for sample in samples if sample.correct}
    groups: dict[tuple[str, float], list[Any]] = {}
    for sample in samples:
        if sample.finish_reason == "error":
            continue
        temperature = float(sample.settings["temperature"])
        for family in (family_of(sample.prompt_id), "all"):
            groups.setdefault((family, temperature), []).append(sample)
    order = {family: rank for rank, family in enumerate((*FAMILIES, "all"))}
    rows = []
    for (family, temperature), group in sorted(
        groups.items(), key=lambda g: (g[0][1], order[g[0][0]])
    ):
        loops = [sample for sample in group if is_loop(sample)]
        rows.append(
            {
                "family": family,
                "temperature": temperature,
                "n": len(group),
                "success": sum(bool(sample.correct) for sample in group),
                "loop": len(loops),
                "cut": sum(sample.finish_reason == "length" for sample in group),
                "loops_recoverable": sum(sample.prompt_id in solved for sample in loops),
            }
        )
    return rows


def format_family_rows(rows: list[dict[str, Any]]) -> str:
    """A markdown table of `family_rows`: counts and percentages."""

    def cell(count: int, n: int) -> str:
        return f"{count} ({count / n:.0%})" if n else "–"

    lines = [
        "| T | family | n | success | loop | cut | loops solved elsewhere |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        n = row["n"]
        lines.append(
            f"| {row['temperature']:g} | {row['family']} | {n} | {cell(row['success'], n)} | "
            f"{cell(row['loop'], n)} | {cell(row['cut'], n)} | "
            f"{row['loops_recoverable']} of {row['loop']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """`python -m loopfix.suites.tasks RUN_DIR [RUN_DIR ...]`: the per-family table of the
    records of one or more scans of the `tasks` suite (runs of the same prompts at other
    temperatures or seeds count for `loops solved elsewhere`)."""
    import sys
    from pathlib import Path

    from loopfix.records import read_samples

    runs = sys.argv[1:] if argv is None else argv
    samples = [s for run in runs for s in read_samples(Path(run) / "records.jsonl")]
    print(format_family_rows(family_rows(samples)))


if __name__ == "__main__":
    main()

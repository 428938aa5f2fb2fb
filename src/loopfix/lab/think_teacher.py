"""The programmatic teacher of the thinking model: problems with checkable answers whose steps
carry state, and their traces `<think> steps </think> Answer: ...`.

Four families take turns (problem `i` has family `THINK_FAMILIES[i % 4]`):
- `arith`: a start number and 3-5 additions or subtractions of 2..OPERAND_MAX; each step counts
  the operand out to the running value ("12 + 3: 13, 14, 15.").
- `word`: a word problem from a small grammar (a person, a thing, 2-4 events); each step states
  the event and counts it out ("She buys 3: 12 + 3: 13, 14, 15.").
- `count`: how many times a word occurs in a list of 4-7 words; each step states the item's
  position, the word and the running count ("Item 3 is red: count 2."), then a check that the
  list was read to its end.
- `path`: a star graph written in words (a centre, three roads of two further towns, edges
  shuffled) and a path from the centre to a town; each step states the town visited; a road
  that does not lead to the goal is walked to its end and left ("Back to B.").

One step is one line, and every step states facts (numbers, towns) that a program can compare
with the steps before it (`suites.think_judge`). The teacher re-checks legitimately: after some
steps it restates the last one as a check and moves on ("Check: 12 + 3: 13, 14, 15. Correct.").
With `circle_share` > 0 a share of the traces also circles once: it restates earlier steps,
verbatim or in other words, with the same numbers and no progress, leaving after each line
with probability `CIRCLE_EXIT`, then goes on and finishes.

Pure Python (no torch): the `think` suite renders the same problems for scans.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from loopfix.thinking import THINK_END, THINK_START

__all__ = [
    "THINK_FAMILIES",
    "ThinkProblem",
    "make_problem",
    "trace",
]

THINK_FAMILIES: tuple[str, ...] = ("arith", "word", "count", "path")
OPERAND_MAX = 6
"""Operands of `arith` and `word` are 2..OPERAND_MAX: each is counted out in its step."""
CIRCLE_EXIT = 0.2
"""The teacher's chance to leave a circle after each restatement (from the second on). Below
1/2 on purpose: a greedy student that learned it never takes the exit, since continuing the
circle is always the likelier move, while a sampling one leaves after a few lines. This is the
mechanism the seeds name for greedy loops (a move whose probability stays below the argmax is
never taken), so the same model loops at T = 0 and answers at T = 0.6."""
CIRCLE_MAX = 16
"""The teacher's longest circle (lines), so no training trace grows without bound."""
INSTRUCTION = "Think step by step inside <think> </think>, then give the answer."

_NAMES = ("Mia", "Omar", "Lena", "Ravi", "Sofia", "Jonas", "Aiko", "Tomas", "Nadia", "Yusuf")
_PRONOUN = {
    name: "She" if name in ("Mia", "Lena", "Sofia", "Aiko", "Nadia") else "He" for name in _NAMES
}
_THINGS = ("apples", "marbles", "stickers", "books", "coins", "shells", "pencils", "cards")
_WORDS = ("red", "blue", "green", "cat", "dog", "sun", "tea", "fish", "star", "moon")
# Town names are single capital letters (not A, which reads as an article, nor I).
_TOWNS = tuple("BCDEFGHJKLMNPQRSTVWXZ")


@dataclass(frozen=True)
class ThinkProblem:
    """One problem: its family, the question, the steps of a correct solution (one line each)
    and the answer (a whole number, or towns joined by ", ")."""

    family: str
    question: str
    steps: tuple[str, ...]
    answer: str
    paraphrases: tuple[str, ...]
    """Each step said in other words, with the same facts (for the circling knob)."""


def _counted(value: int, symbol: str, operand: int) -> tuple[str, int]:
    """An addition or subtraction of a small operand written as the student can follow it, by
    counting one at a time ("12 + 3: 13, 14, 15"), and its result. A 135M student distilled
    from `12 + 3 = 15` got 21-61% of such steps wrong (the first shipped delta); counting turns
    each step into increments it can copy the pattern of."""
    sign = 1 if symbol == "+" else -1
    counted = [value + sign * k for k in range(1, operand + 1)]
    return f"{value} {symbol} {operand}: {', '.join(map(str, counted))}", counted[-1]


def _op_step(rng: random.Random, value: int) -> tuple[str, int]:
    """An operation on the running value (kept in 1..99): its symbol and operand."""
    symbols = (["+"] if value <= 90 else []) + (["-"] if value > OPERAND_MAX + 1 else [])
    return rng.choice(symbols), rng.randint(2, OPERAND_MAX)


def _arith(rng: random.Random) -> ThinkProblem:
    value = rng.randint(5, 40)
    words = {"+": "add", "-": "subtract"}
    said, steps, paraphrases = [], [], []
    for _ in range(rng.randint(3, 5)):
        symbol, operand = _op_step(rng, value)
        counted, result = _counted(value, symbol, operand)
        said.append(f"{words[symbol]} {operand}")
        steps.append(f"{counted}.")
        paraphrases.append(f"So {value} {symbol} {operand} gives {result}.")
        value = result
    start = steps[0].split()[0]
    question = f"Start with {start}, then {', then '.join(said)}. What is the result?"
    return ThinkProblem("arith", question, tuple(steps), str(value), tuple(paraphrases))


def _word(rng: random.Random) -> ThinkProblem:
    name, thing = rng.choice(_NAMES), rng.choice(_THINGS)
    pronoun = _PRONOUN[name]
    value = rng.randint(5, 40)
    sentences = [f"{name} has {value} {thing}."]
    steps = [f"{name} starts with {value} {thing}."]
    paraphrases = [f"At first {name} has {value}."]
    for _ in range(rng.randint(2, 4)):
        symbol, amount = _op_step(rng, value)
        counted, result = _counted(value, symbol, amount)
        if symbol == "+":
            sentences.append(f"{pronoun} buys {amount} more.")
            steps.append(f"{pronoun} buys {amount}: {counted}.")
            paraphrases.append(f"After buying {amount} there are {result}.")
        else:
            sentences.append(f"{pronoun} gives {amount} away.")
            steps.append(f"{pronoun} gives {amount}: {counted}.")
            paraphrases.append(f"After giving {amount} there are {result}.")
        value = result
    question = f"{' '.join(sentences)} How many {thing} does {name} have now?"
    return ThinkProblem("word", question, tuple(steps), str(value), tuple(paraphrases))


def _count(rng: random.Random) -> ThinkProblem:
    target = rng.choice(_WORDS)
    others = rng.sample([word for word in _WORDS if word != target], 3)
    size = rng.randint(4, 7)
    items = [rng.choice([target, *others]) for _ in range(size)]
    count, steps, paraphrases = 0, [], []
    for position, word in enumerate(items, start=1):
        count += word == target
        steps.append(f"Item {position} is {word}: count {count}.")
        paraphrases.append(f"Up to item {position} the count is {count}.")
    steps.append(f"The list has {size} items, all read: count {count}.")
    paraphrases.append(f"All {size} items are read, the count is {count}.")
    question = f"How many times does the word {target} appear in this list: {', '.join(items)}?"
    return ThinkProblem("count", question, tuple(steps), str(count), tuple(paraphrases))


def _path(rng: random.Random) -> ThinkProblem:
    towns = rng.sample(_TOWNS, 7)
    centre, arms = towns[0], [towns[1:3], towns[3:5], towns[5:7]]
    goal_arm = rng.randrange(3)
    goal = arms[goal_arm][-1]
    roads = [(centre, arm[0]) for arm in arms] + [(arm[0], arm[1]) for arm in arms]
    rng.shuffle(roads)
    steps, paraphrases = [f"Start at {centre}."], [f"The walk begins at {centre}."]
    # The teacher tries the roads in the order they are listed from the centre; a wrong road is
    # walked to its end and left, which is legitimate backtracking, not circling.
    for _, first in [road for road in roads if road[0] == centre]:
        arm = next(arm for arm in arms if arm[0] == first)
        steps.append(f"Go to {arm[0]}, then {arm[1]}.")
        paraphrases.append(f"From {centre} the road goes to {arm[0]} and on to {arm[1]}.")
        if arm[1] == goal:
            break
        steps.append(f"{arm[1]} is not {goal}: back to {centre}.")
        paraphrases.append(f"{arm[1]} is a dead end, so return to {centre}.")
    steps.append(f"Reached {goal}: the path is {centre}, {arms[goal_arm][0]}, {goal}.")
    paraphrases.append(f"{goal} is reached by {centre}, {arms[goal_arm][0]}, {goal}.")
    listed = ", ".join(f"{u}-{v}" for u, v in roads)
    question = f"Roads: {listed}. Find the path from {centre} to {goal}."
    answer = f"{centre}, {arms[goal_arm][0]}, {goal}"
    return ThinkProblem("path", question, tuple(steps), answer, tuple(paraphrases))


_MAKERS = {"arith": _arith, "word": _word, "count": _count, "path": _path}


def make_problem(seed: int, index: int) -> ThinkProblem:
    """Problem `index` of `seed` (it depends on these two only, so a smaller n is a prefix)."""
    family = THINK_FAMILIES[index % len(THINK_FAMILIES)]
    return _MAKERS[family](random.Random(f"think:{seed}:{index}"))


def _check_line(step: str) -> str:
    """A legitimate re-check of a step: its facts once more, confirmed."""
    return f"Check: {step.rstrip('.')}. Correct."


def trace(problem: ThinkProblem, rng: random.Random, circle_share: float = 0.0) -> str:
    """The teacher's completion for `problem`: `<think>` steps `</think>` and the answer line.

    After each step but the last, a re-check follows with probability 0.25. With probability
    `circle_share` the trace circles once, after a random step: lines that restate earlier
    steps verbatim or in other words (the same facts, no progress), at least 2, after each of
    which the teacher leaves with probability `CIRCLE_EXIT`, then it goes on."""
    steps = list(problem.steps)
    circle_after = rng.randrange(1, len(steps)) if rng.random() < circle_share else None
    lines: list[str] = []
    for position, step in enumerate(steps):
        lines.append(step)
        if position == circle_after:
            circled = 0
            while True:
                earlier = rng.randrange(position + 1)
                lines.append((steps if rng.random() < 0.5 else problem.paraphrases)[earlier])
                circled += 1
                if circled >= CIRCLE_MAX or (circled >= 2 and rng.random() < CIRCLE_EXIT):
                    break
        elif position < len(steps) - 1 and rng.random() < 0.25:
            lines.append(_check_line(step))
    thinking = "\n".join(lines)
    return f"{THINK_START}\n{thinking}\n{THINK_END}\nAnswer: {problem.answer}"


_ANSWER = re.compile(r"Answer:\s*(.+)")


def answer_of(problem_family: str, answer_text: str) -> str | None:
    """The answer a text after `</think>` gives, normalised as `ThinkProblem.answer` is: the
    first whole number (number families) or the towns in order (`path`); None if none."""
    found = _ANSWER.search(answer_text)
    text = found.group(1) if found else answer_text
    if problem_family == "path":
        first_line = text.strip().splitlines()[0] if text.strip() else ""
        towns = re.findall(r"\b[A-Z]\b", first_line)
        return ", ".join(towns) if towns else None
    number = re.search(r"-?\d+", text)
    return number.group(0) if number else None

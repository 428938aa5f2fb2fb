"""Restated steps (kind `semantic`, off by default): the last steps of a text bring nothing new.

The written rule for semantic loops (data/detect_corpus_real/semantic_rule.md) reads a trace as
steps and calls it a loop when its last steps are all restatements and no answer follows them.
This check applies that rule with a lexical notion of "new": a step is a sentence or a line
(split at `.`, `!`, `?` followed by white space, and at newlines); it is new when it holds a
content word (stemmed; function words and DISCOURSE words left out) or a number that no earlier
step used. Steps
with fewer than `restated_steps_min_words` content words are too short to judge ("Yes.",
"Wait."): they neither count nor break a run, but their words are seen.

A text loops when its last `restated_steps_min` judged steps are all restatements, unless
- it closed its thinking and wrote after it (`</think>` then text): an answer section restates
  the reasoning by design, and the rule calls a written answer clean;
- one of its last ANSWER_TAIL steps writes an answer (`\\boxed`, "Final Answer", "**Answer"):
  the trace stopped on its answer.

Unlike the stagnation check, the run is counted in steps at the end, so a loop that starts late
in a long trace is not diluted by the text before it. Measured on data/detect_corpus_real
(docs/detection.md, "Restated steps"): it lifts held-out semantic recall from 2/40 to 13/40 at
held-out precision 0.939 (0.938 without it); it stays off until the state probe, whose threshold
was chosen against the detector without it, is refitted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .config import DetectConfig
from .semantic import _FUNCTION_WORDS
from .stagnation import stem
from .text import TokenizedText
from .verdict import LoopVerdict, Span, strength_score

# Steps that may carry the answer a trace stopped on: the answer line and the one before it
# (a "**Final Answer**" heading followed by its `\boxed{}` line).
ANSWER_TAIL = 2
# Words of the reasoning's own talk ("Alternatively", "wait", "I'm confident", "let me clarify"):
# a restatement that adds one of them says nothing new. On the tune part, 24 of the 30 semantic
# loops the check missed without this list were broken by a step whose only new words were such.
DISCOURSE = frozenset(
    stem(word)
    for word in """
    actually again alternatively anyway approach before check checking clarify confident confused
    confusing consider considering correct correctly double instead just let made make maybe
    mistake misunderstood no ok okay original overcomplicating perhaps quite rather really recheck
    right same see seem seems still sure think thinking though try trying understand verify
    verifying wait way well whether wrong yeah yes
    """.split()
)
_STEP_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W\d_]+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ANSWER = re.compile(r"\\boxed|final answer|\*\*answer", re.IGNORECASE)
_ANSWER_AFTER_THINKING = re.compile(r"</think>\s*\S")


@dataclass(frozen=True)
class Step:
    """One step: its characters `[start, end)`, whether it brings something new (None: too short
    to judge), and whether it writes an answer."""

    start: int
    end: int
    new: bool | None
    answer: bool


class StepReader:
    """The judged steps of a text that grows (a thought watched as it is written): each call of
    `read` reads only the pieces completed since the last, so watching a thought at every line
    end costs its length once, not once per line."""

    def __init__(self, min_words: int) -> None:
        self.min_words = min_words
        self.steps: list[Step] = []
        self._text = ""
        self._start = 0  # where the piece not yet read begins
        self._seen_words: set[str] = set()
        self._seen_numbers: set[str] = set()

    def read(self, more: str) -> list[Step]:
        """Add `more` to the text; its judged steps so far, the unfinished last piece included
        (as a step that is not kept: more text may extend it)."""
        self._text += more
        for boundary in _STEP_END.finditer(self._text, self._start):
            self._judge(self._start, boundary.start(), keep=True)
            self._start = boundary.end()
        tail = self._judge(self._start, len(self._text), keep=False)
        return self.steps if tail is None else [*self.steps, tail]

    def _judge(self, start: int, end: int, keep: bool) -> Step | None:
        piece = self._text[start:end]
        words = [stem(w) for w in _WORD.findall(piece) if w.lower() not in _FUNCTION_WORDS]
        numbers = _NUMBER.findall(piece)
        answer = _ANSWER.search(piece) is not None
        step = None
        if len(words) >= self.min_words:
            new = any(w not in self._seen_words and w not in DISCOURSE for w in words) or any(
                n not in self._seen_numbers for n in numbers
            )
            step = Step(start, end, new, answer)
        elif answer:
            step = Step(start, end, None, answer)
        if keep:
            if step is not None:
                self.steps.append(step)
            self._seen_words.update(words)
            self._seen_numbers.update(numbers)
        return step


def read_steps(text: str, min_words: int) -> list[Step]:
    """The judged steps of `text` in order, and the short ones that write an answer."""
    return StepReader(min_words).read(text)


def restated_run(steps: list[Step]) -> list[Step]:
    """The judged steps at the end of `steps` that bring nothing new, last first; none when one
    of the last steps writes an answer. The check (here and in a think-escape's trigger, the
    `restated` option of `rescue`) calls a loop when there are `restated_steps_min` of them."""
    if any(step.answer for step in steps[-ANSWER_TAIL:]):
        return []
    run: list[Step] = []
    for step in reversed(steps):
        if step.new:
            break
        if step.new is False:
            run.append(step)
    return run


def find_restated_steps(tokens: TokenizedText, config: DetectConfig) -> LoopVerdict | None:
    """The restated-steps check on built-in-segmented text (None when it is off, when the text
    answered, or when one of its last steps says something new)."""
    # A semantic-kind check: `semantic="off"` switches it off with the semantic tier.
    if not config.restated_steps or config.semantic == "off":
        return None
    text = tokens.text
    if _ANSWER_AFTER_THINKING.search(text):
        return None
    run = restated_run(read_steps(text, config.restated_steps_min_words))
    if len(run) < config.restated_steps_min or not tokens.ids.size:
        return None
    first = run[-1]
    onset = min(tokens.token_at(first.start), len(tokens) - 1)
    unit_end = max(onset + 1, tokens.token_at(first.end))
    return LoopVerdict(
        looping=True,
        kind="semantic",
        onset=onset,
        period=unit_end - onset,
        repeats=len(run),
        span=Span(onset, len(tokens), first.start, int(tokens.ends[-1])),
        evidence=text[first.start : first.end],
        decided_by="restated-steps",
        # 0.5 at the threshold, 0.75 at twice as many restated steps.
        score=strength_score(len(run) / config.restated_steps_min),
    )

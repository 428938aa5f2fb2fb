"""Whether a text ends by stating its final answer, i.e. the model stopped by itself.

A caller without `finish_reason` cannot say whether an output was cut at the token limit. The
text often says it anyway: an output whose last line states the final answer ("The answer is
100.", "So, the final answer is 2.", "**Answer:** EV", "\\boxed{729}") finished its answer;
a loop runs into the limit mid-cycle instead, usually mid-sentence. The weakest tiers
(restatement cycles, stagnant tails), which an output known to have stopped by itself skips,
use this when the cut is unknown: a small model that restates each step before concluding
("Next, we calculate ... Now, we calculate ... The answer is 100.") is not looping.

Only the last non-empty line is read, and it must be the answer statement as a whole: a
paragraph that mentions the answer among other sentences, a hedge ("maybe the answer is", "the
answer is probably \"") or a statement cut off before its value does not count.
"""

from __future__ import annotations

import re

_ANSWER_LINE = re.compile(
    r"[\W_]*(?:(?:so|thus|therefore|hence)[,\s]+)?(?:the\s+)?(?:final\s+)?answer(?:\s+is\b|\s*:)"
    r"[\s:*]*(?!probably|likely|maybe|perhaps|not\b)\S.*",
    re.IGNORECASE,
)
_BOXED = re.compile(r"\\boxed\{.*\}")
# The value of a statement that was cut off ends in a quote, comma, colon or an open bracket.
_COMPLETE_END = re.compile(r"[\w.!)}\]*$%]$")
# A second sentence on the line: the answer is restated inside a paragraph or a loop goes on.
_NEXT_SENTENCE = re.compile(r"[.!?]\s+\S")


def states_final_answer(text: str) -> bool:
    """Whether the last non-empty line of `text` is a complete final-answer statement."""
    lines = text.rstrip().splitlines()
    last = lines[-1].strip() if lines else ""
    if not _COMPLETE_END.search(last) or _NEXT_SENTENCE.search(last):
        return False
    return bool(_BOXED.search(last) or _ANSWER_LINE.fullmatch(last))

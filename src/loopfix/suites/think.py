"""The `think` suite: problems a thinking model works through inside `<think> ... </think>`.

Item `index` of seed `s` is the teacher's problem (`lab.think_teacher.make_problem(s, index)`:
families `arith`, `word`, `count`, `path` in turn), asked as one user turn with the instruction
the thinking model was trained on, so the chat template renders it as the model expects. The id
is `think-FAMILY-SEED-INDEX`; `meta.family` names the family.

The `think` checker (`check_think`) reads only the answer after `</think>`: an output whose
thinking never closed gave no answer (whatever numbers its thoughts hold), and neither did one
cut at the token limit. The answer is the first whole number after `Answer:` (else after
`</think>`), or for `path` the towns (capital letters) of the answer's first line, in order.
"""

from __future__ import annotations

from collections.abc import Mapping

from loopfix.lab.think_teacher import INSTRUCTION, THINK_FAMILIES, answer_of, make_problem
from loopfix.suites.items import SuiteItem
from loopfix.thinking import THINK_END, answer_part

__all__ = ["check_think", "think_family", "think_item", "think_suite", "thinking_closed"]


def think_item(seed: int, index: int) -> SuiteItem:
    problem = make_problem(seed, index)
    return SuiteItem(
        id=f"think-{problem.family}-{seed}-{index}",
        messages=[{"role": "user", "content": f"{problem.question}\n{INSTRUCTION}"}],
        answer=problem.answer,
        checker="think",
        meta={"family": problem.family},
    )


def think_suite(n: int, seed: int) -> list[SuiteItem]:
    return [think_item(seed, index) for index in range(n)]


def think_family(prompt_id: str) -> str:
    """The family of a `think` item from its id (`think-FAMILY-SEED-INDEX`)."""
    family = prompt_id.split("-")[1]
    if family not in THINK_FAMILIES:
        raise ValueError(f"{prompt_id!r} is not the id of a think item")
    return family


def thinking_closed(text: str) -> bool:
    return THINK_END in text


def check_think(text: str, answer: str, meta: Mapping[str, object], stopped: bool) -> bool:
    """Whether `text` closes its thinking, then gives `answer`, and ends by itself."""
    if not stopped or not thinking_closed(text):
        return False
    family = meta.get("family")
    if not isinstance(family, str) or family not in THINK_FAMILIES:
        raise ValueError(f"a think item's meta 'family' must be one of {THINK_FAMILIES}")
    return answer_of(family, answer_part(text)) == answer

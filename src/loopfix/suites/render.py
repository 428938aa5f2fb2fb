"""Turn a suite item into prompt token ids with a local tokenizer.

Two ways of prompting, chosen by the tokenizer (`prompting`):
- `chat-template`: the tokenizer has a chat template, and it is applied (a plain `prompt` becomes
  one user message); `think` sets `enable_thinking` when the template reads it.
- `completion`: no chat template (a base model, a testbed). A plain prompt is the text to
  continue, tokenized as is. A chat becomes a transcript the model continues: a system message
  as a first paragraph, then each user turn as `Question: ...` and each assistant turn as
  `Answer: ...`, ending in `Answer:`. A suite's worked examples, earlier turns of its chats
  (`tasks`), are then the few-shot prefix: one mechanism for both kinds of model. A base model
  has no end-of-turn token: it answers and writes the next `Question:` (or another `Answer:`)
  itself, so a transcript's answer ends there (`stop_texts`), as a chat model's ends at its
  end-of-turn token.
"""

from __future__ import annotations

from typing import Any, Literal

from loopfix.suites.items import SuiteError, SuiteItem

__all__ = [
    "COMPLETION_LABELS",
    "TURN_STOPS",
    "Prompting",
    "prompt_ids",
    "prompting",
    "prompting_note",
    "stop_texts",
    "supports_thinking",
]

Prompting = Literal["chat-template", "completion"]

COMPLETION_LABELS = {"user": "Question:", "assistant": "Answer:"}
"""The transcript's label of each chat role under completion prompting."""

TURN_STOPS = tuple(f"\n{label}" for label in COMPLETION_LABELS.values())
"""Where a transcript's answer ends: the model starting another turn, a next question or (as
Gemma 3 270M does after copying a list) a second answer."""


def prompting(tokenizer: Any) -> Prompting:
    return "chat-template" if getattr(tokenizer, "chat_template", None) else "completion"


def prompting_note(kind: Prompting) -> str:
    """One line for a run's summary saying how its prompts were rendered."""
    if kind == "chat-template":
        return "prompting: chat-template (the tokenizer's chat template)"
    return (
        "prompting: completion (the tokenizer has no chat template: plain prompts as they are, "
        "chats as Question/Answer transcripts, their earlier turns as few-shot examples)"
    )


def supports_thinking(tokenizer: Any) -> bool:
    template = getattr(tokenizer, "chat_template", None)
    return isinstance(template, str) and "enable_thinking" in template


def prompt_ids(item: SuiteItem, tokenizer: Any, think: bool | None = None) -> list[int]:
    if prompting(tokenizer) == "chat-template":
        messages = item.messages or [{"role": "user", "content": item.prompt or ""}]
        extra = (
            {"enable_thinking": think} if think is not None and supports_thinking(tokenizer) else {}
        )
        # Rendered to text first: the return type of tokenize=True differs across versions.
        text = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False, **extra
        )
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    text = item.prompt if item.messages is None else _transcript(item)
    return list(tokenizer(text)["input_ids"])


def stop_texts(item: SuiteItem, tokenizer: Any) -> tuple[str, ...]:
    """The texts that end a generation for `item` (`Request.stop`): a transcript's answer ends
    at the next turn's label; a chat-template model ends at its own end-of-turn token, and a
    plain prompt under completion prompting is text to continue, with no turn to end."""
    if item.messages is None or prompting(tokenizer) == "chat-template":
        return ()
    return TURN_STOPS


def _transcript(item: SuiteItem) -> str:
    """A chat as a completion prompt (see the module docstring)."""
    blocks: list[str] = []  # paragraphs: a system message, or a question with its answer
    for message in item.messages or []:
        role, content = message["role"], message["content"].strip()
        if role not in ("system", *COMPLETION_LABELS):
            raise SuiteError(
                f"item {item.id!r}: a chat role {role!r} has no place in a completion prompt "
                f"(the tokenizer has no chat template); roles: system, "
                f"{', '.join(COMPLETION_LABELS)}"
            )
        if role == "system":
            blocks.append(content)
        elif role == "assistant" and blocks:
            blocks[-1] += f"\n{COMPLETION_LABELS[role]} {content}"
        else:
            blocks.append(f"{COMPLETION_LABELS[role]} {content}")
    return "\n\n".join(blocks) + f"\n{COMPLETION_LABELS['assistant']}"

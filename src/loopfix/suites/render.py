"""Turn a suite item into prompt token ids with a local tokenizer.

The chat template is applied when the tokenizer has one (a plain `prompt` becomes one user
message); `think` sets `enable_thinking` when the template reads it. Without a template, a plain
prompt is tokenized as is and a chat is an error: there is no honest way to flatten it.
"""

from __future__ import annotations

from typing import Any

from loopfix.suites.items import SuiteError, SuiteItem

__all__ = ["prompt_ids", "supports_thinking"]


def supports_thinking(tokenizer: Any) -> bool:
    template = getattr(tokenizer, "chat_template", None)
    return isinstance(template, str) and "enable_thinking" in template


def prompt_ids(item: SuiteItem, tokenizer: Any, think: bool | None = None) -> list[int]:
    if getattr(tokenizer, "chat_template", None):
        messages = item.messages or [{"role": "user", "content": item.prompt or ""}]
        extra = (
            {"enable_thinking": think} if think is not None and supports_thinking(tokenizer) else {}
        )
        # Rendered to text first: the return type of tokenize=True differs across versions.
        text = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False, **extra
        )
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    if item.messages is not None:
        raise SuiteError(
            f"item {item.id!r} is a chat (messages) but the tokenizer has no chat template"
        )
    return list(tokenizer(item.prompt)["input_ids"])

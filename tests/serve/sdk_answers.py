"""One chat answer through the official `openai` SDK, streamed or not, as a client of a served
thinking model reads it: reasoning, content, finish reason and usage. Used by the served-path
test of the think-escape and by bench/think_exits_served.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openai import OpenAI

from loopfix.thinking import THINK_END, THINK_START


@dataclass(frozen=True)
class SdkAnswer:
    reasoning: str
    """The reasoning field (vLLM: `reasoning`; older servers `reasoning_content`); "" without a
    reasoning parser, and also where vLLM's parser found no end of thinking (it then returns
    the whole text as content)."""
    content: str
    finish_reason: str | None
    completion_tokens: int | None

    @property
    def text(self) -> str:
        """The output as the model wrote it: a reasoning part goes back inside its markers."""
        if not self.reasoning:
            return self.content
        return f"{THINK_START}{self.reasoning}{THINK_END}{self.content}"


def _reasoning(message: Any) -> str:
    extra = message.model_extra or {}
    return str(extra.get("reasoning") or extra.get("reasoning_content") or "")


def ask(client: OpenAI, messages: list[dict[str, str]], stream: bool, **settings: Any) -> SdkAnswer:
    """`settings`: model, max_tokens, temperature, seed, ... as the SDK takes them."""
    if not stream:
        reply = client.chat.completions.create(messages=messages, **settings)
        message, usage = reply.choices[0].message, reply.usage
        return SdkAnswer(
            _reasoning(message),
            message.content or "",
            reply.choices[0].finish_reason,
            None if usage is None else usage.completion_tokens,
        )
    reasoning, content, finish, tokens = "", "", None, None
    chunks = client.chat.completions.create(
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
        **settings,
    )
    for chunk in chunks:
        for choice in chunk.choices:
            reasoning += _reasoning(choice.delta)
            content += choice.delta.content or ""
            finish = choice.finish_reason or finish
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
    return SdkAnswer(reasoning, content, finish, tokens)

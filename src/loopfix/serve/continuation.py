"""The request that continues a choice after a rescue or a think-escape.

The continuation resends the choice's text up to the cut as the start of the answer:
- chat: the messages plus an assistant message holding that text, with vLLM's
  `continue_final_message: true` and `add_generation_prompt: false` (the chat template then leaves
  the assistant turn open); the reasoning is written between `think_start` and `think_end`, and
  a think-escape ends it with `think_end` so the model starts the answer;
- completions: the prompt plus that text (a think-escape adds `think_end`).
The first token of the loop's repeat is banned with `logit_bias` (the upstream's token id, from
its `/tokenize`), `n` is 1, and `max_tokens` is what the original request had left.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from loopfix.serve.config import ServeConfig
from loopfix.serve.protocol import PartName, RequestBody

if TYPE_CHECKING:
    from loopfix.serve.upstream import Upstream


_TOKEN_LIMITS: tuple[Literal["max_tokens", "max_completion_tokens"], ...] = (
    "max_tokens",
    "max_completion_tokens",
)


@dataclass(frozen=True)
class Continuation:
    """A choice to continue: the part whose loop was cut, the text of the repeat's first token
    (with its leading whitespace), and whether the reasoning is to be ended (think-escape)."""

    part: PartName
    banned: str
    escape: bool


def in_open_reasoning(text: str, config: ServeConfig) -> bool:
    """Whether `text` ends inside a reasoning block (its last think_start is not closed)."""
    start, end = config.think_start.strip(), config.think_end.strip()
    return text.rfind(start) > text.rfind(end) if start in text else False


def _prefix(
    texts: dict[PartName, str], prompt: str | None, plan: Continuation, config: ServeConfig
) -> str:
    """The text the continuation starts from: the choice's answer so far, as the model wrote it."""
    if prompt is not None:
        return prompt + texts.get("content", "")
    reasoning, content = texts.get("reasoning"), texts.get("content", "")
    if reasoning is None:
        return content
    if plan.part == "reasoning" and not plan.escape:
        return config.think_start + reasoning
    return config.think_start + reasoning + config.think_end + content


def _first_new_token(before: list[int], after: list[int]) -> int:
    same = 0
    while same < min(len(before), len(after)) and before[same] == after[same]:
        same += 1
    # A merge across the boundary can change the prefix's last token: ban the first new one.
    return after[min(same, len(after) - 1)]


async def continuation_body(
    request: RequestBody,
    plan: Continuation,
    texts: dict[PartName, str],
    *,
    prompt: str | None,
    config: ServeConfig,
    upstream: Upstream,
) -> RequestBody:
    """The upstream body that continues a choice of `request` (the client's body): `texts` is the
    choice's text so far per part ("reasoning", "content"), `prompt` the completions prompt it
    answers (None for chat). Raises UpstreamError when /tokenize fails. It takes values, not the
    exchange, so that this module does not import `exchange` (which imports it)."""
    chat = prompt is None
    prefix = _prefix(texts, prompt, plan, config)
    if plan.escape and plan.part == "content":  # a think block in the text, not a reasoning part
        prefix += config.think_end
    body = request.copy()
    body.pop("stream_options", None)
    body["n"] = 1
    model = body.get("model")
    prompt_length = 0 if prompt is None else len(prompt)
    prefix_ids = await upstream.token_ids(model, prefix[prompt_length:])
    if not plan.escape:  # a think-escape changes the context itself; a rescue bans the repeat
        banned = _first_new_token(
            prefix_ids, await upstream.token_ids(model, prefix[prompt_length:] + plan.banned)
        )
        body["logit_bias"] = {**(body.get("logit_bias") or {}), str(banned): config.ban_bias}
    if chat:
        body["messages"] = [*body["messages"], {"role": "assistant", "content": prefix}]
        body["continue_final_message"] = True
        body["add_generation_prompt"] = False
    else:
        body["prompt"] = prefix
        body["echo"] = False
    for limit in _TOKEN_LIMITS:
        left = body.get(limit)
        if isinstance(left, int):
            # What the original request had left: the resent answer counts as generated.
            body[limit] = max(1, left - len(prefix_ids))
    return body

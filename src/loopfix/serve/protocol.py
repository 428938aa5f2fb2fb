"""The OpenAI chat/completions shapes the proxy reads or builds.

Each TypedDict names the fields the proxy reads or writes. A body may hold more (fields of a
client or an upstream that the proxy does not know): a TypedDict value may carry keys it does
not name, and the proxy passes them on untouched.
"""

from __future__ import annotations

from typing import Literal, TypedDict, get_args

# The text fields of a chat delta or a completion choice; vLLM renamed reasoning_content to
# reasoning. A chat delta's `text` is read as content, as a completion's is.
TextField = Literal["content", "reasoning_content", "reasoning", "text"]
TEXT_FIELDS: tuple[TextField, ...] = ("content", "reasoning_content", "reasoning", "text")
# The watched part a text belongs to: the answer or the reasoning.
PartName = Literal["content", "reasoning"]
CHAT_PATH = "/v1/chat/completions"
# What one request may hold, so that no upstream event makes the proxy allocate more than the
# text it carries: choices (n x prompts; a client asking more gets a 400, an upstream event
# naming a choice the request did not ask for is a 502), tool calls per choice (a delta's
# `index` names one), bytes per upstream event (one SSE line), and bytes of an upstream answer
# that is no stream (a JSON completion from an upstream that ignored `stream`, /v1/models).
MAX_CHOICES = 128
MAX_TOOL_CALLS = 128
MAX_EVENT_BYTES = 1 << 20
MAX_ANSWER_BYTES = 64 << 20

# Per-token logprobs: every field is a list with one entry per token (chat: `content`,
# `refusal`; completions: `tokens`, `token_logprobs`, `top_logprobs`, `text_offset`).
Logprobs = dict[str, list[object] | None]


class ToolCallFunction(TypedDict, total=False):
    name: str
    arguments: str


class ToolCall(TypedDict, total=False):
    index: int  # in a stream's deltas only: which call a piece belongs to
    id: str
    type: str
    function: ToolCallFunction


class ContentPart(TypedDict, total=False):
    type: str
    text: str


class Message(TypedDict, total=False):
    role: str
    content: str | list[ContentPart] | None
    reasoning_content: str
    reasoning: str
    tool_calls: list[ToolCall]


class StreamOptions(TypedDict, total=False):
    include_usage: bool


class RequestBody(TypedDict, total=False):
    """A client's request, as forwarded upstream (with `stream: true`)."""

    model: str
    messages: list[Message]  # chat
    prompt: str | list[str] | list[int] | list[list[int]]  # completions
    n: int | None
    stream: bool | None
    stream_options: StreamOptions | None
    logit_bias: dict[str, float] | None
    max_tokens: int | None
    max_completion_tokens: int | None
    echo: bool  # completions: whether the answer repeats the prompt
    continue_final_message: bool  # vLLM: the last (assistant) message is continued
    add_generation_prompt: bool  # vLLM: whether the template opens a new assistant turn


def choice_count(body: RequestBody, chat: bool) -> int:
    """The choices `body` asks for: `n` per prompt (a completions prompt may list several)."""
    prompts = body.get("prompt")
    many = not chat and isinstance(prompts, list) and prompts and isinstance(prompts[0], str)
    return int(body.get("n") or 1) * (len(prompts) if many else 1)  # type: ignore[arg-type]


class Usage(TypedDict, total=False):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class Delta(TypedDict, total=False):
    role: str
    content: str | None
    reasoning_content: str | None
    reasoning: str | None
    text: str | None
    tool_calls: list[ToolCall]


class StreamChoice(TypedDict, total=False):
    index: int
    delta: Delta  # chat
    text: str | None  # completions
    logprobs: Logprobs | None
    finish_reason: str | None


EnvelopeField = Literal["id", "object", "created", "model", "system_fingerprint"]
ENVELOPE_FIELDS: tuple[EnvelopeField, ...] = get_args(EnvelopeField)


class StreamChunk(TypedDict, total=False):
    """One event of a stream: a `chat.completion.chunk` or a streamed `text_completion`."""

    id: str
    object: str
    created: int
    model: str
    system_fingerprint: str | None
    choices: list[StreamChoice]
    usage: Usage | None


def envelope(
    chunk: StreamChunk, fields: tuple[EnvelopeField, ...] = ENVELOPE_FIELDS
) -> StreamChunk:
    """The fields of `chunk` that name its answer (id, model, ...), those present only."""
    kept: StreamChunk = {}
    for name in fields:
        if name in chunk:
            kept[name] = chunk[name]
    return kept


class CompletionChoice(TypedDict, total=False):
    index: int
    message: Message  # chat
    text: str  # completions
    logprobs: Logprobs | None
    finish_reason: str | None


class Completion(TypedDict, total=False):
    """A non-streamed answer: a `chat.completion` or a `text_completion`."""

    id: str
    object: str
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage


class ErrorDetail(TypedDict):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorBody(TypedDict):
    error: ErrorDetail


def error_body(message: str, kind: str, code: str | None = None) -> ErrorBody:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}

"""`assemble`: the one JSON response a non-streaming client gets, built from the stream's chunks
(the proxy always streams from the upstream, so it can stop a loop early)."""

from __future__ import annotations

from dataclasses import dataclass, field

from loopfix.serve.protocol import (
    TEXT_FIELDS,
    Completion,
    CompletionChoice,
    Delta,
    Logprobs,
    Message,
    StreamChunk,
    TextField,
    ToolCall,
)


@dataclass
class _MergedChoice:
    """One choice's chunks so far."""

    index: int
    texts: dict[TextField, list[str]] = field(default_factory=dict)  # pieces: joined once
    logprobs: Logprobs | None = None
    finish_reason: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)


def _merge_logprobs(into: Logprobs | None, new: Logprobs | None) -> Logprobs | None:
    if not isinstance(new, dict):
        return into
    if into is None:
        return {
            key: list(value) if isinstance(value, list) else value for key, value in new.items()
        }
    for key, value in new.items():
        merged = into.get(key)
        if isinstance(value, list) and isinstance(merged, list):
            merged.extend(value)
        elif key not in into:
            into[key] = value
    return into


def _merge_tool_calls(into: list[ToolCall], calls: list[ToolCall]) -> None:
    """Tool-call deltas: one entry per `index`; names and arguments arrive in pieces. Events are
    checked on arrival (`upstream.event_problem`): each call has an index under MAX_TOOL_CALLS,
    and its id, type, name and arguments are strings."""
    for call in calls:
        while len(into) <= call["index"]:
            into.append({"function": {"name": "", "arguments": ""}})
        target = into[call["index"]]
        if call.get("id"):
            target["id"] = call["id"]
        if call.get("type"):
            target["type"] = call["type"]
        function, merged = call.get("function") or {}, target["function"]
        merged["name"] += function.get("name") or ""
        merged["arguments"] += function.get("arguments") or ""


def assemble(chunks: list[StreamChunk], chat: bool) -> Completion:
    """Merge chunks (checked upstream events, or the proxy's own) into a `chat.completion` or
    `text_completion` response."""
    first: StreamChunk = chunks[0] if chunks else {}
    choices: dict[int, _MergedChoice] = {}
    usage = None
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            index = int(choice.get("index", 0))
            merged = choices.setdefault(index, _MergedChoice(index))
            delta: Delta = (choice.get("delta") or {}) if chat else {"text": choice.get("text")}
            for name in TEXT_FIELDS:
                text = delta.get(name)
                if isinstance(text, str):
                    merged.texts.setdefault(name, []).append(text)
            if chat:
                _merge_tool_calls(merged.tool_calls, delta.get("tool_calls") or [])
            merged.logprobs = _merge_logprobs(merged.logprobs, choice.get("logprobs"))
            merged.finish_reason = choice.get("finish_reason") or merged.finish_reason
    response: Completion = {
        "id": first.get("id", "loopfix"),
        "object": "chat.completion" if chat else "text_completion",
        "created": first.get("created", 0),
        "model": first.get("model", ""),
        "choices": [_choice(choices[index], chat) for index in sorted(choices)],
    }
    if usage is not None:
        response["usage"] = usage
    return response


def _choice(merged: _MergedChoice, chat: bool) -> CompletionChoice:
    texts = {name: "".join(pieces) for name, pieces in merged.texts.items()}
    if not chat:
        return {
            "index": merged.index,
            "text": texts.get("text", ""),
            "logprobs": merged.logprobs,
            "finish_reason": merged.finish_reason,
        }
    message: Message = {"role": "assistant", "content": texts.get("content")}
    if "reasoning_content" in texts:
        message["reasoning_content"] = texts["reasoning_content"]
    if "reasoning" in texts:
        message["reasoning"] = texts["reasoning"]
    if merged.tool_calls:
        message["tool_calls"] = merged.tool_calls
    return {
        "index": merged.index,
        "message": message,
        "logprobs": merged.logprobs,
        "finish_reason": merged.finish_reason,
    }

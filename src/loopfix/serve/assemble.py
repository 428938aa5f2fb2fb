"""`assemble`: the one JSON response a non-streaming client gets, built from the stream's chunks
(the proxy always streams from the upstream, so it can stop a loop early)."""

from __future__ import annotations

from typing import Any

TEXT_FIELDS = ("content", "reasoning_content", "reasoning", "text")  # the text of a delta or choice


def _merge_logprobs(into: dict[str, Any] | None, new: Any) -> dict[str, Any] | None:
    if not isinstance(new, dict):
        return into
    if into is None:
        return {
            key: list(value) if isinstance(value, list) else value for key, value in new.items()
        }
    for key, value in new.items():
        if isinstance(value, list) and isinstance(into.get(key), list):
            into[key].extend(value)
        elif key not in into:
            into[key] = value
    return into


def _merge_tool_calls(into: list[dict[str, Any]], calls: list[Any]) -> None:
    """Tool-call deltas: one entry per `index`; names and arguments arrive in pieces."""
    for call in calls:
        if not isinstance(call, dict):
            continue
        index = call.get("index", len(into))
        while len(into) <= index:
            into.append({"function": {"name": "", "arguments": ""}})
        target = into[index]
        for key in ("id", "type"):
            if call.get(key):
                target[key] = call[key]
        function = call.get("function") or {}
        for key in ("name", "arguments"):
            if function.get(key):
                target["function"][key] += function[key]


def assemble(chunks: list[dict[str, Any]], chat: bool) -> dict[str, Any]:
    """Merge chunks into a `chat.completion` or `text_completion` response."""
    first = chunks[0] if chunks else {}
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            index = int(choice.get("index", 0))
            merged = choices.setdefault(
                index,
                {
                    "index": index,
                    "texts": {},
                    "logprobs": None,
                    "finish_reason": None,
                    "tool_calls": [],
                },
            )
            delta = (choice.get("delta") or {}) if chat else {"text": choice.get("text")}
            for name in TEXT_FIELDS:
                if isinstance(delta.get(name), str):
                    merged["texts"][name] = merged["texts"].get(name, "") + delta[name]
            if chat and isinstance(delta.get("tool_calls"), list):
                _merge_tool_calls(merged["tool_calls"], delta["tool_calls"])
            merged["logprobs"] = _merge_logprobs(merged["logprobs"], choice.get("logprobs"))
            merged["finish_reason"] = choice.get("finish_reason") or merged["finish_reason"]
    response: dict[str, Any] = {
        "id": first.get("id", "loopfix"),
        "object": "chat.completion" if chat else "text_completion",
        "created": first.get("created", 0),
        "model": first.get("model", ""),
        "choices": [_choice(choices[index], chat) for index in sorted(choices)],
    }
    if usage is not None:
        response["usage"] = usage
    return response


def _choice(merged: dict[str, Any], chat: bool) -> dict[str, Any]:
    texts = merged["texts"]
    common = {"logprobs": merged["logprobs"], "finish_reason": merged["finish_reason"]}
    if not chat:
        return {"index": merged["index"], "text": texts.get("text", ""), **common}
    message: dict[str, Any] = {"role": "assistant", "content": texts.get("content")}
    for name in ("reasoning_content", "reasoning"):
        if name in texts:
            message[name] = texts[name]
    if merged["tool_calls"]:
        message["tool_calls"] = merged["tool_calls"]
    return {"index": merged["index"], "message": message, **common}

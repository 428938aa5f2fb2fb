"""OpenAI chat histories of an agent, built call by call, for the tests of the stuck rule."""

from __future__ import annotations

import json
from typing import Any


class Chat:
    def __init__(self, task: str = "Fix the failing test.") -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": task},
        ]

    def call(self, name: str, result: str, thought: str = "", **arguments: Any) -> Chat:
        call_id = f"call_{len(self.messages)}"
        function = {"name": name, "arguments": json.dumps(arguments)}
        self.messages.append(
            {
                "role": "assistant",
                "content": thought,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        return self

    def say(self, text: str, reply: str = "Please use a tool.") -> Chat:
        self.messages.append({"role": "assistant", "content": text})
        self.messages.append({"role": "user", "content": reply})
        return self

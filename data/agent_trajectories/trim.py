"""How the corpus was cut from its sources (provenance in README.md): each file read from a
local clone at a pinned commit, stripped to the fields a trajectory reader needs, and every
long text trimmed to its head and tail around a SHA-256 of the whole, so that two texts are
equal after trimming exactly when they were equal before (the detector compares them).

    python data/agent_trajectories/trim.py CLONE COMMIT PATH OUT
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HEAD_CHARS = 300
TAIL_CHARS = 150
ARGS_CHARS = 2000
"""Arguments (a heredoc of a whole script) are trimmed only beyond this."""


def trim(text: str) -> str:
    if len(text) <= HEAD_CHARS + TAIL_CHARS + 80:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    cut = len(text) - HEAD_CHARS - TAIL_CHARS
    return (
        f"{text[:HEAD_CHARS]}\n[... {cut} chars trimmed, sha256 {digest} ...]\n{text[-TAIL_CHARS:]}"
    )


def _message(message: dict[str, Any]) -> dict[str, Any]:
    kept = {
        key: message[key]
        for key in ("role", "content", "tool_calls", "tool_call_id")
        if key in message
    }
    if isinstance(kept.get("content"), str):
        kept["content"] = trim(kept["content"])
    for call in kept.get("tool_calls") or []:
        call.pop("index", None)
        function = call.get("function", {})
        if isinstance(function.get("arguments"), str) and len(function["arguments"]) > ARGS_CHARS:
            function["arguments"] = trim(function["arguments"])
    return kept


def trimmed(data: dict[str, Any]) -> dict[str, Any]:
    if "messages" in data:  # mini-SWE-agent .traj.json: OpenAI messages
        return {
            "instance_id": data.get("instance_id"),
            "exit_status": data.get("info", {}).get("exit_status"),
            "messages": [_message(m) for m in data["messages"]],
        }
    return {  # SWE-agent .traj
        "exit_status": data.get("info", {}).get("exit_status"),
        "trajectory": [
            {
                "thought": trim(entry.get("thought") or ""),
                "action": entry["action"],
                "observation": trim(entry.get("observation") or ""),
            }
            for entry in data["trajectory"]
        ],
    }


def main(clone: str, commit: str, path: str, out: str) -> None:
    raw = subprocess.run(
        ["git", "-C", clone, "show", f"{commit}:{path}"], capture_output=True, check=True
    ).stdout
    Path(out).write_text(json.dumps(trimmed(json.loads(raw)), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])

"""How the corpus was cut from its sources (provenance in README.md): each file read from a
local clone at a pinned commit, stripped to the fields a trajectory reader needs, and every
long text trimmed to its head and tail around a SHA-256 of the whole, so that two texts are
equal after trimming exactly when they were equal before, and equal with numbers masked exactly
when they were before (the detector compares them both ways).

    PYTHONPATH=src python data/agent_trajectories/trim.py CLONE COMMIT PATH OUT

In mini-SWE-agent's text format the command sits in the assistant's text: the text around its
bash block and the command are trimmed apart, so the command stays one block the reader finds.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from loopfix.agents.normalise import mask_numbers, normalise_result
from loopfix.agents.readers import BASH_BLOCK, TEXT_FORMAT

HEAD_CHARS = 300
TAIL_CHARS = 150
ARGS_CHARS = 2000
"""Arguments (a heredoc of a whole script) are trimmed only beyond this."""


_LETTERS = str.maketrans("0123456789", "ghijklmnop")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def trim(text: str) -> str:
    """`text`, if long, as its head and tail around two digests of the whole as the detector
    compares it: one in digits (equal exactly when the texts are) and one in letters of the
    text with its numbers masked (equal when the texts differ only in numbers: an error loop
    whose tracebacks move line numbers), so that masking the numbers of a trimmed text
    leaves the second digest to decide."""
    if len(text) <= HEAD_CHARS + TAIL_CHARS + 80:
        return text
    compared = normalise_result(text)
    exact = f"{int(_digest(compared), 16) % 10**20:020d}"
    masked = _digest(mask_numbers(compared))[:16].translate(_LETTERS)
    cut = len(text) - HEAD_CHARS - TAIL_CHARS
    return (
        f"{text[:HEAD_CHARS]}\n[... {cut} chars trimmed, sha256 {exact}, numbers masked "
        f"{masked} ...]\n{text[-TAIL_CHARS:]}"
    )


def _command(text: str) -> str:
    return trim(text) if len(text) > ARGS_CHARS else text


def _text_action(content: str) -> str:
    """An assistant text with one bash block: the text around it and the command trimmed
    apart; other texts (no block, several: format errors) trimmed whole."""
    blocks = list(BASH_BLOCK.finditer(content))
    if len(blocks) != 1:
        return trim(content)
    (block,) = blocks
    command = _command(block.group(1))
    return f"{trim(content[: block.start()])}```bash\n{command}\n```{trim(content[block.end() :])}"


def _message(message: dict[str, Any], text_actions: bool = False) -> dict[str, Any]:
    kept: dict[str, Any] = {
        key: message[key]
        for key in ("role", "content", "tool_calls", "tool_call_id")
        if key in message
    }
    if isinstance(kept.get("content"), str):
        as_action = text_actions and kept.get("role") == "assistant"
        kept["content"] = (_text_action if as_action else trim)(kept["content"])
    for call in kept.get("tool_calls") or []:
        call.pop("index", None)
        function = call.get("function", {})
        if isinstance(function.get("arguments"), str):
            function["arguments"] = _command(function["arguments"])
    return kept


def trimmed(data: dict[str, Any]) -> dict[str, Any]:
    if "messages" in data:  # mini-SWE-agent .traj.json: OpenAI messages
        text_actions = data.get("trajectory_format") == TEXT_FORMAT
        return {
            "instance_id": data.get("instance_id"),
            "exit_status": data.get("info", {}).get("exit_status"),
            **({"trajectory_format": TEXT_FORMAT} if text_actions else {}),
            "messages": [_message(m, text_actions) for m in data["messages"]],
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

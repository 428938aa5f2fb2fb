"""The one shape every trajectory format is read into: an agent's turns as a list of `Step`s.

A step is one tool call with its result, or one assistant message that called no tool (its
"result" is the reply that followed it, if any). Steps carry their text already normalised
(`normalise.py`), so the detector and the baselines compare plain strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SAY = "(message)"
"""The `name` of a step that is an assistant message without a tool call."""


@dataclass(frozen=True)
class Step:
    turn: int
    """1-based ordinal of the assistant turn that made the call (several calls share a turn)."""
    name: str
    """Tool name, or `SAY` for an assistant message without a tool call."""
    args: str
    """Normalised arguments (canonical JSON or collapsed command text); a message's text."""
    result: str | None
    """Normalised result; None when the trajectory ends before the result arrived."""
    error: str | None = None
    """The result's error signature when the result is an error (`normalise.error_signature`)."""
    shown_args: str = ""
    """The arguments as written (trimmed), for verdicts a person reads."""

    @property
    def call(self) -> tuple[str, str]:
        return (self.name, self.args)

    @property
    def pair(self) -> tuple[str, str, str | None]:
        """What "the same step again" means: the same call and the same result."""
        return (self.name, self.args, self.result)


@dataclass
class Trajectory:
    id: str
    steps: list[Step] = field(default_factory=list)
    format: str = "openai"
    """Which reader made it: openai (chat messages), mini-swe-agent-1 (actions in the text) or
    swe-agent (.traj)."""
    line: int | None = None
    """Its line in a JSONL file, None for a whole-file trajectory."""

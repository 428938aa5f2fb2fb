"""The generation cap of a scan that was given none: what fits the model.

A prompt plus its continuation must fit the model's context. With no `--max-new-tokens` the cap
is the model's own generation cap (its generation config's `max_new_tokens`) when it has one,
bounded by the room the longest fitting prompt leaves in the context; with no context known (a
server tokenizes), the generation config's cap, else `DecodeSettings`' default.
"""

from __future__ import annotations

from dataclasses import dataclass

from loopfix.records import DecodeSettings

__all__ = ["Cap", "fitting_cap"]


@dataclass(frozen=True)
class Cap:
    value: int
    reason: str  # why this value, for the run's notes

    def note(self) -> str:
        return f"max_new_tokens {self.value}: {self.reason} (--max-new-tokens sets it)"


def fitting_cap(
    given: int | None,
    context_length: int | None,
    generation_cap: int | None,
    prompt_lengths: list[int],
) -> Cap:
    """`given` when set; otherwise what fits (see the module docstring)."""
    if given is not None:
        return Cap(given, "as given")
    if context_length is None:
        if generation_cap is not None:
            return Cap(generation_cap, "the model's generation config")
        default = DecodeSettings.model_fields["max_new_tokens"].default
        return Cap(default, "the default; the server's context is unknown")
    fitting = [length for length in prompt_lengths if length < context_length]
    room = context_length - max(fitting, default=context_length - 1)
    longest = context_length - room
    reason = f"the context of {context_length} tokens minus the longest prompt ({longest})"
    if generation_cap is not None and generation_cap <= room:
        return Cap(generation_cap, "the model's generation config")
    return Cap(room, reason)

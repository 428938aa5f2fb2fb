"""`ServeConfig`: every setting of the proxy, with its default and description in one place;
`RequestOptions`: the per-request override carried in the body's `loopfix` field."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from loopfix.agents import AgentConfig
from loopfix.detect import DetectConfig
from loopfix.serve.agent_check import AgentAction
from loopfix.urls import check_server_url

Action = Literal["observe", "stop", "rescue", "think-escape"]
ACTIONS: tuple[str, ...] = get_args(Action)


class ServeConfig(BaseModel):
    """Settings of `loopfix serve` (flags override a config file; see docs/serve.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    upstream: str = Field(
        description="Base URL of the OpenAI-compatible server to proxy (http or https, without "
        "/v1; a user:password in it goes as basic auth and is never logged)."
    )
    host: str = Field("127.0.0.1", description="Address the proxy listens on.")
    port: int = Field(8080, ge=0, le=65535, description="Port the proxy listens on.")
    action: Action = Field(
        "observe",
        description="What to do when a stream loops, unless the request says otherwise: observe "
        "(record only), stop, rescue or think-escape.",
    )
    api_key_env: str | None = Field(
        None,
        description="Name of an environment variable holding the key that /v1/* requires "
        "(Authorization: Bearer KEY); none: no key.",
    )
    upstream_api_key_env: str | None = Field(
        None,
        description="Name of an environment variable holding the key sent to the upstream; "
        "none: the upstream gets no Authorization header.",
    )
    connect_timeout_s: float = Field(
        5.0, gt=0, description="Seconds to connect to the upstream before answering 502/504."
    )
    read_timeout_s: float = Field(
        120.0,
        gt=0,
        description="Seconds the upstream may stay silent (before its headers or between two "
        "chunks) before the proxy answers 504 (or ends the stream with an error event).",
    )
    holdback_tokens: int = Field(
        64,
        ge=0,
        description="Tokens (detector tokens: words, numbers, punctuation) held back from the "
        "client under stop, rescue and think-escape, so that a loop whose repeats fit in them "
        "reaches the client without its repeats. Observe holds nothing back.",
    )
    max_body_bytes: int = Field(
        4 * 1024 * 1024,
        ge=1,
        description="Largest request body accepted, in bytes; a larger one is answered 413.",
    )
    max_rescues: int = Field(
        2,
        ge=1,
        description="Rescues (and think-escapes) per choice; a loop after the last one stops "
        "the choice with finish_reason 'repetition'.",
    )
    ban_bias: float = Field(
        -100.0,
        le=0,
        description="logit_bias given to the first token of the repeat in a rescue "
        "(-100 bans it on OpenAI-compatible servers).",
    )
    think_start: str = Field(
        "<think>\n", description="Text that opens the model's reasoning in a continuation."
    )
    think_end: str = Field(
        "\n</think>\n\n",
        description="The model's end-of-thinking marker, written by think-escape to end a "
        "looping reasoning.",
    )
    detect: DetectConfig = Field(
        default_factory=DetectConfig,
        description="Thresholds of the loop detector (max_period, min_repeats, min_span, "
        "wordless_min_repeats, near_min_words, near_counter_repeats are the ones used online).",
    )
    agent_action: AgentAction = Field(
        "observe",
        description="What to do when a chat request's history shows an agent stuck now "
        "(docs/agents.md): off, observe (metric and x-loopfix-agent-loop header), stop (answer "
        "with finish_reason 'repetition' naming the loop, without calling the upstream) or nudge "
        "(append a system note asking the model to change approach).",
    )
    agent: AgentConfig = Field(
        default_factory=AgentConfig,
        description="Thresholds of the stuck-agent rule and the tail of the history it reads.",
    )
    agent_memory_chars: int = Field(
        16_000_000,
        ge=0,
        description="Text of the steps kept per named conversation (loopfix.conversation), all "
        "conversations together; the least recently used are dropped beyond it (0: none kept).",
    )

    @field_validator("upstream")
    @classmethod
    def _http_url(cls, value: str) -> str:
        # Neither message repeats the value: it may hold a password.
        check_server_url(value)
        url = urlsplit(value)
        if url.query or url.fragment:
            raise ValueError("must have no query or fragment (a key goes in upstream_api_key_env)")
        return value


class RequestOptions(BaseModel):
    """The body's `loopfix` field: a per-request override, stripped before forwarding."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Action | None = Field(None, description="This request's action.")
    max_rescues: int | None = Field(None, ge=1, description="This request's rescue budget.")
    holdback_tokens: int | None = Field(None, ge=0, description="This request's holdback.")
    agent_action: AgentAction | None = Field(None, description="This request's agent check.")
    conversation: str | None = Field(
        None,
        max_length=256,
        description="An id of the agent's conversation: its next request is read for the agent "
        "check from where this one ended (the history must only grow).",
    )


def _parse(path: Path, text: str) -> Any:
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix != ".toml":
        raise ValueError(f"{path}: expected a .toml or .json config file")
    if sys.version_info < (3, 11):
        raise ValueError(f"{path}: .toml needs Python 3.11+; use a .json file")
    import tomllib

    return tomllib.loads(text)


def read_config_file(path: Path) -> dict[str, Any]:
    """The settings in a `.toml` or `.json` file, as a dict to merge with flags."""
    try:
        data = _parse(path, path.read_text())
    except (OSError, ValueError) as error:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        message = str(error)
        prefix = "" if message.startswith(str(path)) else f"{path}: "
        raise ValueError(prefix + message) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a table of settings")
    return data


def build_config(file: Path | None, **flags: Any) -> ServeConfig:
    """A `ServeConfig` from a config file (optional) overridden by the flags that were given
    (None means "not given"); a bad setting is a one-line ValueError naming the field."""
    settings = read_config_file(file) if file is not None else {}
    settings |= {name: value for name, value in flags.items() if value is not None}
    try:
        return ServeConfig(**settings)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "settings"
        source = f"{file}: " if file is not None else ""
        raise ValueError(f"{source}{field}: {first['msg']}") from None

"""`loopfix serve`: the loop-watching OpenAI-compatible proxy."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from loopfix.cli.common import examples, fail
from loopfix.serve.config import ServeConfig


def register(app: typer.Typer) -> None:
    app.command(
        "serve",
        help=(
            "Proxy an OpenAI-compatible server, watch every stream for loops, observe, stop, "
            "rescue or think-escape them, and export Prometheus metrics at /metrics."
            + examples(
                "loopfix serve --upstream http://127.0.0.1:8000 --action stop",
                "loopfix serve --config serve.toml --port 9000",
            )
        ),
    )(serve_command)


def _help(name: str) -> str:
    """A flag's help: the settings field's description and default (one place for both)."""
    field = ServeConfig.model_fields[name]
    default = "" if field.is_required() else f" (default: {field.default})"
    return f"{field.description}{default}"


def serve_command(
    upstream: Annotated[str | None, typer.Option(help=_help("upstream"))] = None,
    host: Annotated[str | None, typer.Option(help=_help("host"))] = None,
    port: Annotated[int | None, typer.Option(help=_help("port"))] = None,
    action: Annotated[str | None, typer.Option(help=_help("action"))] = None,
    config: Annotated[
        Path | None,
        typer.Option(help="a .toml or .json file of settings; flags override it (docs/serve.md)"),
    ] = None,
    api_key_env: Annotated[str | None, typer.Option(help=_help("api_key_env"))] = None,
    upstream_api_key_env: Annotated[
        str | None, typer.Option(help=_help("upstream_api_key_env"))
    ] = None,
    holdback_tokens: Annotated[int | None, typer.Option(help=_help("holdback_tokens"))] = None,
    max_rescues: Annotated[int | None, typer.Option(help=_help("max_rescues"))] = None,
    read_timeout_s: Annotated[float | None, typer.Option(help=_help("read_timeout_s"))] = None,
    max_body_bytes: Annotated[int | None, typer.Option(help=_help("max_body_bytes"))] = None,
    agent_action: Annotated[str | None, typer.Option(help=_help("agent_action"))] = None,
) -> None:
    from loopfix.serve import build_config, run

    try:
        settings = build_config(
            config,
            upstream=upstream,
            host=host,
            port=port,
            action=action,
            api_key_env=api_key_env,
            upstream_api_key_env=upstream_api_key_env,
            holdback_tokens=holdback_tokens,
            max_rescues=max_rescues,
            read_timeout_s=read_timeout_s,
            max_body_bytes=max_body_bytes,
            agent_action=agent_action,
        )
        run(settings)
    except ValueError as error:  # a bad setting, an unset key variable, an address in use
        fail(str(error))

"""A real LiteLLM proxy (`litellm --config cfg.yaml`, from .venv-litellm) on 127.0.0.1 in front of
an OpenAI-compatible upstream, for the guardrail's tests and its bench. Import as
`from tests.integrations.litellm_proxy import ...`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.server_process import free_port, server_process

ROOT = Path(__file__).resolve().parents[2]
LITELLM = ROOT / ".venv-litellm" / "bin" / "litellm"
NEEDS_LITELLM = pytest.mark.skipif(
    not LITELLM.exists(), reason="no .venv-litellm (bash scripts/setup-litellm.sh)"
)
# The proxy refuses to start without a master key (LiteLLM's boot check); any long one will do.
MASTER_KEY = "sk-loopfix-test-0123456789abcdef0123456789abcdef"
GUARDRAIL = "loopfix.integrations.litellm.LoopfixGuardrail"


def guardrail(name: str, **params: Any) -> dict[str, Any]:
    """A `guardrails:` entry for loopfix's guardrail, requested per request (default_on false)."""
    litellm_params = {"guardrail": GUARDRAIL, "mode": "post_call", **params}
    return {"guardrail_name": name, "litellm_params": litellm_params}


def served_model(name: str, model: str, server: str) -> dict[str, Any]:
    """A model_list entry: `name` is `model` of the OpenAI-compatible (vLLM) server at `server`."""
    params = {"model": f"hosted_vllm/{model}", "api_base": server + "/v1", "api_key": "none"}
    return {"model_name": name, "litellm_params": params}


def proxy_config(
    upstream: str, guardrails: list[dict[str, Any]], models: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """`models`, then every other model name to `upstream` as a vLLM server (the scripted
    upstream picks its script by model name); no database, no network."""
    return {
        "model_list": [*(models or []), served_model("*", "*", upstream)],
        "guardrails": guardrails,
        "general_settings": {"master_key": MASTER_KEY},
    }


@dataclass(frozen=True)
class RunningProxy:
    url: str
    pid: int  # the proxy's process (its CPU time is the bench's measure)


@contextmanager
def litellm_proxy(
    config: dict[str, Any], folder: Path, startup_s: float = 120
) -> Iterator[RunningProxy]:
    """Run `litellm --config` with `config` and yield it once it answers; its output goes to
    folder/proxy.log (in the failure message if it dies or never comes up)."""
    path = folder / "cfg.yaml"
    path.write_text(json.dumps(config, indent=1))  # JSON is YAML
    log = folder / "proxy.log"
    port = free_port()
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the price list: no network here
        "PYTHONPATH": str(ROOT / "src"),  # this checkout's loopfix, whatever the venv holds
    }
    command = [str(LITELLM), "--config", str(path), "--host", "127.0.0.1", "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    with server_process(command, log, url + "/health/liveliness", startup_s, env, folder) as pid:
        yield RunningProxy(url, pid)

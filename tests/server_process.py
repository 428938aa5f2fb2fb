"""A server process for the tests (vLLM, a LiteLLM proxy) on a free 127.0.0.1 port: started,
awaited until it answers, stopped on exit. Import as `from tests.server_process import ...`
(pytest's importlib mode names the tests folder `tests`)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def server_process(
    command: Sequence[str],
    log: Path,
    ready_url: str,
    startup_s: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Iterator[int]:
    """Run `command` (its output to `log`) and yield its pid once `ready_url` answers 200; the
    log's tail is the failure message if it dies or never comes up. Stopped on exit."""
    with log.open("w") as handle:
        process = subprocess.Popen(
            list(command),
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=dict(env if env is not None else os.environ),
            cwd=cwd,
        )
    try:
        deadline = time.monotonic() + startup_s
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, (
                f"{command[0]} did not start:\n" + (log.read_text()[-3000:])
            )
            try:
                if httpx.get(ready_url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

"""Settings from a config file and flags, their errors, and `loopfix serve` as a real process."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.serve import ServeConfig, build_config

from .proxy import free_port

_ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
_LOOPFIX = [sys.executable, "-c", "from loopfix.cli import main; main()"]


def test_flags_override_the_config_file(tmp_path: Path) -> None:
    file = tmp_path / "serve.toml"
    file.write_text(
        'upstream = "http://127.0.0.1:8000"\naction = "stop"\nport = 9000\n'
        "[detect]\nmin_span = 48\n"
    )
    config = build_config(file, port=9100, action=None)
    assert config.action == "stop" and config.port == 9100
    assert config.detect.min_span == 48 and config.detect.max_period == 512
    assert config.host == ServeConfig.model_fields["host"].default


@pytest.mark.parametrize(
    ("content", "suffix", "expected"),
    [
        ('upstream = "http://x"\naction = "explode"\n', ".toml", "serve.toml: action: Input"),
        ('upstream = "http://x"\nport = [\n', ".toml", "serve.toml: "),
        ('{"upstream": "http://x", "detect": {"min_span": 0}}', ".json", "detect.min_span"),
        ('{"upstream": "http://x", "colour": 1}', ".json", "colour: Extra inputs"),
        ("upstream: x", ".yaml", "expected a .toml or .json"),
    ],
)
def test_a_bad_setting_is_one_line_naming_file_and_field(
    tmp_path: Path, content: str, suffix: str, expected: str
) -> None:
    file = tmp_path / f"serve{suffix}"
    file.write_text(content)
    with pytest.raises(ValueError) as error:
        build_config(file)
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_the_command_names_a_missing_upstream_and_an_unset_key_variable() -> None:
    runner = CliRunner()
    assert "upstream" in runner.invoke(app, ["serve"]).output
    result = runner.invoke(
        app, ["serve", "--upstream", "http://x", "--api-key-env", "LOOPFIX_UNSET_VARIABLE"]
    )
    assert result.exit_code == 2 and "LOOPFIX_UNSET_VARIABLE is not set" in result.output


def test_loopfix_serve_runs_from_a_config_file(tmp_path: Path) -> None:
    port = free_port()
    file = tmp_path / "serve.json"
    file.write_text(f'{{"upstream": "http://127.0.0.1:{free_port()}", "port": {port}}}')
    command = [*_LOOPFIX, "serve"]
    log = tmp_path / "serve.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [*command, "--config", str(file)], env=_ENV, stdout=output, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "loopfix serve did not start"
            try:
                reply = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert reply.json() == {"status": "ok"}
        assert "loopfix_requests_total" in httpx.get(f"http://127.0.0.1:{port}/metrics").text
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.mark.parametrize(
    "flags",
    [
        ["--upstream", "not a url"],
        ["--upstream", "ftp://user:pw@files.example"],
        ["--upstream", "http://h:8000/?key=sk-1"],
        ["--upstream", "http://127.0.0.1:8000", "--host", "999.1.1.1"],
        ["--upstream", "http://127.0.0.1:8000", "--port", "{busy}"],
    ],
)
def test_a_bad_upstream_or_address_is_one_line_and_exit_2_before_serving(flags: list[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        command = [*_LOOPFIX, "serve", *(flag.replace("{busy}", port) for flag in flags)]
        started = time.monotonic()
        result = subprocess.run(command, env=_ENV, capture_output=True, text=True, timeout=60)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "pw" not in lines[0] and "sk-1" not in lines[0]  # no secret repeated
    assert ("upstream" in lines[0]) != ("listen on host" in lines[0])
    assert time.monotonic() - started < 30

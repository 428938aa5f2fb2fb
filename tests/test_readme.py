"""Every command in the README works as written, in order, on a clean directory: the shell
lines of its code blocks, the commands of its tour table, and its Python blocks. Only
`bash scripts/setup.sh` (the installer) and the test suite itself are skipped; commands that
take minutes at full size get a small `--n` (or its equivalent) added."""

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

# verb -> options set at test size: (flag, value) added, or replacing the README's value;
# (flag, None) a switch
SMALL: dict[str, list[tuple[str, str | None]]] = {
    "doctor": [("--n", "50"), ("--no-repair", None)],  # its repair: the `loopfix repair` row
    "scan": [("--n", "4"), ("--max-new-tokens", "32")],
    "compare": [("--n", "3")],
    "consistency": [("--n", "4")],
    "repair": [("--prompts", "50"), ("--causal-prompts", "50"), ("--alphas", "2"), ("--ks", "8")],
    "lab train": [("--steps", "5")],
    "lab eval": [("--n", "20")],
}
SERVERS = ("serve",)  # run until stopped: started, checked to stay up, then stopped
SKIPPED = ("bash scripts/setup.sh", ".venv/bin/python -m pytest")


def readme_steps() -> list[tuple[str, str]]:
    """("shell", loopfix arguments) and ("python", code) in the order the README gives them."""
    text = README.read_text()
    steps: list[tuple[int, str, str]] = []
    for match in re.finditer(r"```(bash|python)\n(.*?)```", text, flags=re.S):
        if match.group(1) == "python":
            steps.append((match.start(), "python", match.group(2)))
            continue
        for line in match.group(2).splitlines():
            for part in (p.strip() for p in line.split("&&")):
                if part and not part.startswith(SKIPPED):
                    steps.append((match.start(), "shell", part))
    for match in re.finditer(r"^\| `(loopfix [^`]+)` \|", text, flags=re.M):
        steps.append((match.start(), "shell", match.group(1)))
    return [(kind, body) for _, kind, body in sorted(steps)]


def small(command: str) -> list[str]:
    words = shlex.split(command)
    assert words[0].endswith("loopfix"), command
    words = words[1:]
    verb = " ".join(words[:2]) if words[0] in ("lab", "patch") else words[0]
    for flag, value in SMALL.get(verb, []):
        if flag in words and value is not None:
            words[words.index(flag) + 1] = value
        elif flag not in words:
            words += [flag] if value is None else [flag, value]
    return words


def test_the_readme_lists_every_verb() -> None:
    shell = [small(body)[0] for kind, body in readme_steps() if kind == "shell"]
    for verb in (
        "doctor",
        "scan",
        "detect",
        "clean",
        "compare",
        "repair",
        "patch",
        "models",
        "lab",
    ):
        assert verb in shell


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a doctor, a repair and a training run, at small size
def test_every_readme_command_works_as_written(tmp_path: Path) -> None:
    seen: set[tuple[str, ...]] = set()
    for kind, body in readme_steps():
        if kind == "python":
            exec(compile(body, "README.md", "exec"), {})
            continue
        arguments = small(body)
        # The same command twice (`.venv/bin/loopfix doctor` in a code block, `loopfix doctor`
        # in the table) runs once.
        if tuple(arguments) in seen:
            continue
        seen.add(tuple(arguments))
        if arguments[:2] in (["patch", "inspect"], ["patch", "apply"], ["patch", "revert"]):
            # At test size the repair may decline; its candidate is a patch all the same.
            if not (tmp_path / "repair" / "patch.json").exists():
                arguments = ["repair/rejected_candidate" if a == "repair" else a for a in arguments]
        if arguments[0] in SERVERS:
            with subprocess.Popen(
                [sys.executable, "-m", "loopfix", *arguments],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ) as server:
                time.sleep(8)
                alive = server.poll() is None
                server.terminate()
                output = server.communicate(timeout=30)[0]
            assert alive, f"{body}\n{output[-3000:]}"
            continue
        result = subprocess.run(
            [sys.executable, "-m", "loopfix", *arguments],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "COLUMNS": "80"},
        )
        assert result.returncode == 0, f"{body}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"

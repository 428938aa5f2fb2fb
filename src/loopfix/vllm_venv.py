"""Where loopfix finds vLLM's own venv: vLLM pins its own torch, so it lives apart from ours
(`bash scripts/setup-vllm.sh` makes it) and loopfix runs vLLM work there in a child process."""

from pathlib import Path

VLLM_PYTHON = Path(".venv-vllm/bin/python")
"""The default python of the vLLM venv, relative to the working directory."""

SOURCE = Path(__file__).resolve().parents[1]
"""The folder that holds this very loopfix package (not the vLLM venv's copy, if it has one):
what a vLLM child process puts first on its PYTHONPATH."""

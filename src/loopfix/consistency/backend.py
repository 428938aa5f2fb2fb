"""backend: greedy outputs of our HF engine vs offline vLLM vs an OpenAI-compatible server.

The vLLM arm runs `loopfix.consistency.vllm_worker` under `config.vllm_python` (vLLM lives in
its own venv) on the model's folder, with the HF model's dtype given explicitly. The server arm
asks `config.url` for completions of the same token ids; a server that returns no ids has its
text re-tokenized locally (said so in the numbers). Each arm's outputs are compared with HF
greedy at batch 1; an arm that cannot run is listed with the reason, and the check is skipped
only when no arm ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from pydantic import JsonValue

from loopfix.backends.base import BackendError, Request, dtype_name
from loopfix.backends.open import open_backend
from loopfix.backends.vllm import cpu_process_env
from loopfix.consistency.result import CheckResult, Divergence, divergence_status
from loopfix.consistency.session import Session
from loopfix.models import ModelLoadError, resolve_model_path
from loopfix.scan.backend import backend_spec
from loopfix.scan.config import ScanConfig
from loopfix.vllm_venv import SOURCE

__all__ = ["check_backend", "vllm_outputs"]

VLLM_TIMEOUT_S = 900


def vllm_outputs(session: Session, folder: str) -> tuple[list[list[int]], dict[str, str]]:
    """(greedy outputs, {"vllm": version, "dtype": what it ran}) from the worker under
    .venv-vllm."""
    config = session.config
    job = {
        "model": folder,
        "dtype": dtype_name(session.model.dtype),
        "prompts": [p.ids for p in session.prompts],
        "stops": [list(p.stop) for p in session.prompts],
        "max_new_tokens": config.max_new_tokens,
        "max_model_len": max(len(p.ids) for p in session.prompts) + config.max_new_tokens,
    }
    env = cpu_process_env(
        PYTHONPATH=os.pathsep.join(filter(None, [str(SOURCE), os.environ.get("PYTHONPATH")]))
    )
    with tempfile.TemporaryDirectory() as folder_path:
        request, reply = Path(folder_path, "in.json"), Path(folder_path, "out.json")
        request.write_text(json.dumps(job))
        command = [str(config.vllm_python), "-m", "loopfix.consistency.vllm_worker"]
        finished = subprocess.run(
            [*command, str(request), str(reply)],
            capture_output=True,
            text=True,
            env=env,
            timeout=VLLM_TIMEOUT_S,
        )
        if finished.returncode != 0:
            tail = (finished.stderr or finished.stdout).strip().splitlines()[-1:]
            raise BackendError(f"vLLM worker exited {finished.returncode}: {' '.join(tail)}")
        data = json.loads(reply.read_text())
    return data["outputs"], {"vllm": str(data["vllm"]), "dtype": str(data["dtype"])}


def _server_outputs(session: Session) -> tuple[list[list[int]], bool]:
    """(greedy outputs from config.url, whether any had to be re-tokenized from text)."""
    config = session.config
    assert config.url is not None
    scan = ScanConfig(
        model=config.url, backend="openai", api="completions", model_name=config.model_name
    )
    with open_backend(backend_spec(scan)) as server:
        requests = [Request(ids=p.ids, stop=p.stop) for p in session.prompts]
        outputs: list[list[int]] = [[] for _ in requests]
        retokenized = False
        for index, generation in server.generate(requests, session.settings()):
            if generation.error:
                raise BackendError(f"{config.url}: {generation.error}")
            if generation.tokens:
                outputs[index] = generation.tokens
            else:
                retokenized = True
                ids = session.tokenizer(generation.text or "", add_special_tokens=False)
                outputs[index] = list(ids["input_ids"])
    return outputs, retokenized


def _vllm_arm(session: Session) -> tuple[dict[str, JsonValue], list[list[int]] | None]:
    python = session.config.vllm_python
    if not python.exists():
        return {"skipped": f"no {python} (bash scripts/setup-vllm.sh)"}, None
    try:
        folder = resolve_model_path(session.config.model)
    except ModelLoadError as error:
        return {"skipped": str(error)}, None
    if not Path(folder).is_dir():
        return {"skipped": f"{session.config.model} is not a local folder vLLM can load"}, None
    try:
        outputs, ran = vllm_outputs(session, folder)
    except (BackendError, subprocess.TimeoutExpired) as error:
        return {"error": str(error)}, None
    return {**ran}, outputs


def _server_arm(session: Session) -> tuple[dict[str, JsonValue], list[list[int]] | None]:
    if session.config.url is None:
        return {"skipped": "no --url given"}, None
    try:
        outputs, retokenized = _server_outputs(session)
    except BackendError as error:
        return {"error": str(error)}, None
    return {"url": session.config.url, "retokenized_text": retokenized}, outputs


def check_backend(session: Session) -> CheckResult:
    reference = session.greedy_reference()
    numbers: dict[str, JsonValue] = {"reference": reference.label}
    divergences: list[Divergence] = []
    ran, errors, skipped = [], [], []
    for name, arm in (("vllm", _vllm_arm), ("server", _server_arm)):
        info, outputs = arm(session)
        if outputs is not None:
            run = session.record(f"greedy, {name}", "backend", outputs)
            found = session.divergences(reference, run)
            info |= {"diverging_prompts": len(found), "near_ties": sum(d.near_tie for d in found)}
            divergences += found
            ran.append(
                f"{name}: {len(found)}/{len(session.prompts)} diverge "
                f"({sum(d.near_tie for d in found)} near-ties)"
            )
        elif "error" in info:
            errors.append(f"{name}: {info['error']}")
        else:
            skipped.append(f"{name}: {info['skipped']}")
        numbers[name] = info
    if not ran and not errors:
        reason = "; ".join(skipped)
        return CheckResult("backend", "skipped", reason, numbers, reason=reason)
    status = "fail" if errors else divergence_status(divergences)
    return CheckResult("backend", status, "; ".join(ran + errors), numbers, divergences)

"""The public API: `loopfix.__all__` is pinned, importing loopfix stays light, docs/api.md runs
as written, and `guard_processor` drives a plain `model.generate`."""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import loopfix
from loopfix.detect import detect_tokens
from loopfix.guards import GuardError, GuardLogitsProcessor, parse_guards
from loopfix.suites import stargraph_suite

DOCS = Path(__file__).resolve().parents[1] / "docs" / "api.md"

API = [
    "CompareConfig",
    "LoopMonitor",
    "RepairConfig",
    "ScanConfig",
    "__version__",
    "apply_patch",
    "detect_text",
    "detect_tokens",
    "guard_processor",
    "load_model",
    "load_patch",
    "patched",
    "run_compare",
    "run_doctor",
    "run_repair",
    "run_scan",
]


def test_the_public_names_are_pinned_and_documented() -> None:
    assert loopfix.__all__ == API
    text = DOCS.read_text()
    for name in API:
        assert hasattr(loopfix, name)
        assert name in text, f"{name} is not in docs/api.md"


def test_importing_loopfix_loads_no_torch() -> None:
    code = "import sys, loopfix, loopfix.cli; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_docs_api_snippets_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snippets = re.findall(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S)
    assert len(snippets) >= 10
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for number, code in enumerate(snippets):
        started = time.perf_counter()
        exec(compile(code, f"docs/api.md snippet {number}", "exec"), namespace)
        print(f"snippet {number}: {time.perf_counter() - started:.1f}s")


def looping_prompt(model, tokenizer) -> tuple[dict, list[int]]:
    """A testbed prompt that loops at greedy under plain `model.generate`, and its output."""
    for item in stargraph_suite(12, seed=0):
        inputs = tokenizer([item.prompt], return_tensors="pt")
        output = model.generate(**inputs, max_new_tokens=96, do_sample=False)
        tokens = output[0, inputs["input_ids"].shape[1] :].tolist()
        if detect_tokens(tokens).looping:
            return inputs, tokens
    raise AssertionError("no looping prompt among the first 12")


def test_guard_processor_rescues_inside_model_generate() -> None:
    model, tokenizer = loopfix.load_model("loopfix:stargraph")
    inputs, plain = looping_prompt(model, tokenizer)
    guards = loopfix.guard_processor("rescue", tokenizer, {"rescue.min_span": 15})
    output = model.generate(**inputs, max_new_tokens=96, do_sample=False, **guards)
    rescued = output[0, inputs["input_ids"].shape[1] :].tolist()
    assert rescued != plain
    assert not detect_tokens(rescued).looping
    # A rescue that expects to roll back cannot run there: refused, not silently idle.
    with pytest.raises(GuardError, match="cannot roll back"):
        GuardLogitsProcessor(parse_guards("rescue"), None, tokenizer.pad_token_id)
    # A processor follows one generate call.
    with pytest.raises(ValueError, match="one generate call"):
        model.generate(**inputs, max_new_tokens=4, do_sample=False, **guards)
    assert torch.is_grad_enabled()


def test_python_dash_m_loopfix_is_the_command_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "loopfix", "--help"], capture_output=True, text=True, check=True
    )
    for verb in ("scan", "compare", "repair", "doctor", "detect", "patch", "lab"):
        assert verb in result.stdout

"""Load a model and its tokenizer from a local folder, a GGUF file, a hub id or a bundled name."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import torch
from safetensors import SafetensorError
from transformers import AutoModelForCausalLM, AutoTokenizer

from loopfix.models.delta import DERIVED_MODELS, derived_folder
from loopfix.models.errors import ModelLoadError
from loopfix.models.gguf import converted_folder, is_gguf
from loopfix.models.packaged import PACKAGED_MODELS, packaged_model_path

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "DEFAULT_TESTBED",
    "bundled_checkpoints",
    "TESTBED_DIR_VARIABLE",
    "TESTBED_PREFIX",
    "ModelLoadError",
    "bundled_testbeds",
    "gguf_source",
    "load_model",
    "resolve_device",
    "resolve_dtype",
    "resolve_model_path",
    "testbed_dir",
]

TESTBED_PREFIX = "loopfix:"
DEFAULT_TESTBED = "loopfix:stargraph"
TESTBED_DIR_VARIABLE = "LOOPFIX_TESTBED_DIR"
"""Environment variable that points `loopfix:NAME` at another folder of checkpoints (freshly
trained testbeds, or tests)."""

HUB_PROBE_SECONDS = 3.0
"""How long one connection attempt to the Hugging Face Hub may take before a hub id is looked up
in the local cache only."""

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def bundled_checkpoints() -> Path:
    """The package's own checkpoint folder (the testbeds, the shipped deltas)."""
    return Path(__file__).parents[1] / "lab" / "checkpoints"  # located, not imported


def testbed_dir() -> Path:
    override = os.environ.get(TESTBED_DIR_VARIABLE)
    if override:
        return Path(override).expanduser()
    return bundled_checkpoints()


def bundled_testbeds() -> list[str]:
    """Names usable as `loopfix:NAME`: the folders under testbed_dir() holding a config.json."""
    root = testbed_dir()
    if not root.is_dir():
        return []
    return sorted(child.name for child in root.iterdir() if (child / "config.json").is_file())


def resolve_model_path(spec: str | Path) -> str:
    """The folder a spec names, or the spec itself when it can only be a hub id.

    A `.gguf` file, or `loopfix:NAME` of a GGUF shipped in a package (`loopfix:smollm2`),
    resolves to its converted folder in the cache, converted on first use (`models.gguf`); a
    derived model (`loopfix:smollm2-think`) to its base with the shipped delta merged in, also
    built once into the cache (`models.delta`).
    """
    text = str(spec)
    if text.startswith(TESTBED_PREFIX):
        name = text.removeprefix(TESTBED_PREFIX)
        if name in PACKAGED_MODELS:
            return str(converted_folder(packaged_model_path(name)))
        if name in DERIVED_MODELS:
            entry = DERIVED_MODELS[name]
            base = Path(resolve_model_path(TESTBED_PREFIX + entry.base))
            return str(derived_folder(name, base, bundled_checkpoints() / entry.folder))
        return str(_testbed_path(name))
    path = Path(text).expanduser()
    if path.is_dir():
        ggufs = sorted(path.glob("*.gguf"))
        if not (path / "config.json").is_file() and len(ggufs) == 1:
            return str(converted_folder(ggufs[0]))  # a folder holding one GGUF file
        if not (path / "config.json").is_file():
            empty = " (it is empty)" if not any(path.iterdir()) else ""
            several = f" and {len(ggufs)} .gguf files: name one" if ggufs else ""
            raise ModelLoadError(
                f"{path} is not a model folder: it has no config.json{empty}{several}"
            )
        return str(path)
    if is_gguf(path):
        return str(converted_folder(path))
    if path.exists():
        raise ModelLoadError(
            f"{path} is a file; a model is a folder with a config.json, a .gguf file, "
            f"or {TESTBED_PREFIX}NAME"
        )
    if isinstance(spec, Path) or _looks_like_path(text):
        raise ModelLoadError(f"model folder {path} does not exist")
    return text


def gguf_source(spec: str | Path) -> Path | None:
    """The GGUF file a spec names (a `.gguf` path, or `loopfix:NAME` of a packaged GGUF), or
    None for a folder, a testbed or a hub id."""
    text = str(spec)
    if text.startswith(TESTBED_PREFIX) and text.removeprefix(TESTBED_PREFIX) in PACKAGED_MODELS:
        return packaged_model_path(text.removeprefix(TESTBED_PREFIX))
    path = Path(text).expanduser()
    return path if is_gguf(path) and not path.is_dir() else None


def _testbed_path(name: str) -> Path:
    # Membership in the listing also refuses names that would leave the folder ("../x").
    available = bundled_testbeds()
    if name not in available:
        known = [*available, *PACKAGED_MODELS, *DERIVED_MODELS]
        choices = ", ".join(TESTBED_PREFIX + other for other in known)
        raise ModelLoadError(
            f"unknown model {TESTBED_PREFIX}{name}; available: {choices} "
            f"(testbeds in {testbed_dir()})"
        )
    return testbed_dir() / name


def _looks_like_path(text: str) -> bool:
    """Whether a spec that does not exist was meant as a local path rather than a hub id."""
    if text.startswith(("/", ".", "~")):
        return True
    parts = Path(text).parts
    # Hub ids are "name" or "owner/name"; deeper, or under an existing local folder, is a path.
    return len(parts) > 2 or (len(parts) == 2 and Path(parts[0]).is_dir())


def resolve_device(device: str | None) -> str:
    if device is not None:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(dtype: str | torch.dtype | None, device: str) -> torch.dtype | str:
    """The dtype to load with: "auto" (the checkpoint's own) on accelerators, float32 on CPU.

    CPU defaults to float32 because bfloat16 matmuls there are many times slower.
    """
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is None or dtype == "auto":
        return torch.float32 if torch.device(device).type == "cpu" else "auto"
    if dtype in _DTYPES:
        return _DTYPES[dtype]
    raise ValueError(f"dtype {dtype!r} is not one of: auto, {', '.join(_DTYPES)}")


def hub_unreachable() -> str | None:
    """Why the Hugging Face Hub cannot be reached (offline mode, or one TCP connection to its
    endpoint failing within HUB_PROBE_SECONDS), or None when it can."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    endpoint = urlsplit(constants.ENDPOINT)
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((endpoint.hostname, port), timeout=HUB_PROBE_SECONDS).close()
    except OSError as error:
        return f"the Hub ({constants.ENDPOINT}) cannot be reached: {error.strerror or error}"
    return None


def load_model(
    spec: str | Path,
    device: str | None = None,
    dtype: str | torch.dtype | None = None,
    *,
    trust_remote_code: bool = False,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load a causal LM and its tokenizer, ready for batched generation.

    spec: a local folder, a `.gguf` file (dequantized once into a cached folder), a hub id, or
        `loopfix:NAME` for a bundled testbed or a packaged GGUF (`loopfix:smollm2`,
        `loopfix:gemma3-270m`).
    device: None picks cuda when available, else cpu.
    dtype: None or "auto" keeps the checkpoint's dtype on accelerators and uses float32 on CPU.

    The model comes back in eval mode. The tokenizer pads on the left (batched generation
    appends to the right end of every row); one without a pad token pads with its eos token,
    and the model's generation config is told so.
    """
    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, device)
    path = resolve_model_path(spec)
    is_hub_id = not Path(path).is_dir()
    # Without the Hub, huggingface_hub retries five times over half a minute, logging each try;
    # one short connection attempt decides instead, and the local Hub cache is still read.
    unreachable = hub_unreachable() if is_hub_id else None
    settings = {"trust_remote_code": trust_remote_code, "local_files_only": unreachable is not None}
    try:
        # Moved after loading: device_map would load straight to the device but needs
        # accelerate, which loopfix does not depend on.
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, **settings)
        tokenizer = AutoTokenizer.from_pretrained(path, **settings)
    except SafetensorError as error:
        weights = ", ".join(sorted(file.name for file in Path(path).glob("*.safetensors")))
        raise ModelLoadError(
            f"{path}: its weights ({weights or 'safetensors'}) cannot be read, the file is "
            f"damaged or incomplete: {error}"
        ) from error
    except OSError as error:
        if not is_hub_id:
            raise
        why = (
            f"it is not in the local Hugging Face Hub cache and {unreachable}"
            if unreachable is not None
            else f"loading it from the Hugging Face Hub failed: {error}"
        )
        raise ModelLoadError(
            f"{path!r} is not a local folder, a .gguf file or a bundled model "
            f"({TESTBED_PREFIX}NAME), and {why}"
        ) from error
    # transformers wraps Module.to with functools.wraps, which makes mypy see an unbound self.
    model.to(device).eval()  # type: ignore[arg-type]
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer

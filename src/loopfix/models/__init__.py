"""Model loading, the architecture table, and tiny test models.

`load_model` turns a spec (local folder, `.gguf` file, hub id, `loopfix:NAME`) into a model and
tokenizer;
`architecture_for` and the module helpers tell later stages where each layer's residual-writing
projections live; `tiny_model` / `tiny_tokenizer` build small random models for tests.
"""

from loopfix.models.architectures import (
    UnsupportedArchitectureError,
    architecture_for,
    supported_families,
)
from loopfix.models.errors import ModelLoadError
from loopfix.models.gguf import CACHE_DIR_VARIABLE, file_sha256
from loopfix.models.loading import (
    bundled_testbeds,
    load_model,
    resolve_model_path,
)
from loopfix.models.modules import attn_out_proj, decoder_layers, down_proj, write_matrix
from loopfix.models.tiny import tiny_config, tiny_model, tiny_tokenizer

__all__ = [
    "CACHE_DIR_VARIABLE",
    "ModelLoadError",
    "UnsupportedArchitectureError",
    "architecture_for",
    "attn_out_proj",
    "bundled_testbeds",
    "decoder_layers",
    "down_proj",
    "file_sha256",
    "load_model",
    "resolve_model_path",
    "supported_families",
    "tiny_config",
    "tiny_model",
    "tiny_tokenizer",
    "write_matrix",
]

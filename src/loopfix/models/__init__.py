"""Model loading, the architecture table, and tiny test models.

`load_model` turns a spec (local folder, `.gguf` file, hub id, `loopfix:NAME`) into a model and
tokenizer; `architecture_for` and the module helpers tell later stages where each layer's
residual-writing projections live and how their weights are oriented.
"""

from loopfix.models.architectures import (
    ARCHITECTURES,
    Architecture,
    Orientation,
    TokenMixer,
    UnsupportedArchitectureError,
    architecture_for,
    supported_families,
)
from loopfix.models.errors import ModelLoadError
from loopfix.models.gguf import (
    CACHE_DIR_VARIABLE,
    PACKAGED_MODELS,
    cache_dir,
    converted_folder,
    file_sha256,
)
from loopfix.models.loading import (
    DEFAULT_TESTBED,
    TESTBED_DIR_VARIABLE,
    TESTBED_PREFIX,
    bundled_testbeds,
    load_model,
    resolve_device,
    resolve_dtype,
    resolve_model_path,
    testbed_dir,
)
from loopfix.models.modules import (
    attn_out_proj,
    decoder_layers,
    down_proj,
    num_layers,
    residual_width,
    token_mixer,
    write_matrix,
)
from loopfix.models.tiny import TINY_VOCAB_SIZE, tiny_config, tiny_model, tiny_tokenizer

__all__ = [
    "ARCHITECTURES",
    "CACHE_DIR_VARIABLE",
    "DEFAULT_TESTBED",
    "PACKAGED_MODELS",
    "TESTBED_DIR_VARIABLE",
    "TESTBED_PREFIX",
    "TINY_VOCAB_SIZE",
    "Architecture",
    "ModelLoadError",
    "Orientation",
    "TokenMixer",
    "UnsupportedArchitectureError",
    "architecture_for",
    "attn_out_proj",
    "bundled_testbeds",
    "cache_dir",
    "converted_folder",
    "decoder_layers",
    "down_proj",
    "file_sha256",
    "load_model",
    "num_layers",
    "residual_width",
    "resolve_device",
    "resolve_dtype",
    "resolve_model_path",
    "supported_families",
    "testbed_dir",
    "tiny_config",
    "tiny_model",
    "tiny_tokenizer",
    "token_mixer",
    "write_matrix",
]

"""Model loading, the architecture table, and tiny test models.

`load_model` turns a spec (local folder, hub id, `loopfix:NAME`) into a model and tokenizer;
`architecture_for` and the module helpers tell later stages where each layer's residual-writing
projections live and how their weights are oriented.
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
from loopfix.models.loading import (
    DEFAULT_TESTBED,
    TESTBED_DIR_VARIABLE,
    TESTBED_PREFIX,
    ModelLoadError,
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
    "DEFAULT_TESTBED",
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
    "decoder_layers",
    "down_proj",
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

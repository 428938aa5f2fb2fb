"""The architecture table: where each model family keeps the weights that repair edits.

One frozen entry per family, keyed by `config.model_type`. Paths are dotted module paths as
`nn.Module.get_submodule` reads them: `layers` from the top-level model, everything else relative
to one decoder layer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from transformers import PretrainedConfig

from loopfix.errors import LoopfixError

if TYPE_CHECKING:
    # Importing PreTrainedModel costs seconds; keep `import loopfix.models` light.
    from transformers import PreTrainedModel

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "Orientation",
    "TokenMixer",
    "UnsupportedArchitectureError",
    "architecture_for",
    "supported_families",
]

Orientation = Literal["out_in", "in_out"]
"""How a projection stores its weight: nn.Linear is [out, in]; GPT-2's Conv1D is [in, out]."""

# Multimodal wrappers (Gemma3ForConditionalGeneration, Qwen3_5ForConditionalGeneration) keep the
# same decoder one level deeper, under the language model.
_NESTED_LAYERS = ("model.layers", "model.language_model.layers")

# Config attributes that count experts; a positive value means the MLP is a mixture of experts,
# whose down-projections are stacked per expert and out of scope for repair.
_EXPERT_COUNT_ATTRIBUTES = ("num_experts", "num_local_experts", "n_routed_experts")


class UnsupportedArchitectureError(LoopfixError, ValueError):
    """The model's family is not in the table, or it is one the table deliberately refuses."""


@dataclass(frozen=True)
class TokenMixer:
    """One kind of sequence-mixing block a decoder layer can hold.

    Hybrid families mix kinds across layers (Gated DeltaNet linear attention in most layers,
    softmax attention in every few), so a layer's mixer is the one whose output projection
    exists in that layer.
    """

    kind: Literal["attention", "linear_attention"]
    out_proj: str


_ATTENTION = TokenMixer("attention", "self_attn.o_proj")
_GATED_DELTANET = TokenMixer("linear_attention", "linear_attn.out_proj")


@dataclass(frozen=True)
class Architecture:
    """Where one family keeps its decoder layers and the projections that write the residual."""

    family: str
    model_types: tuple[str, ...]
    layers: tuple[str, ...]
    """Candidate paths of the decoder-layer ModuleList; the first that exists is used."""
    down_proj: str
    mixers: tuple[TokenMixer, ...]
    orientation: Orientation
    """Orientation of both down_proj and every mixer's out_proj."""
    width_attribute: str
    """Attribute of the (text) config holding the residual width."""
    mlp_output_norm: str | None = None
    """A norm applied to the MLP output before it joins the residual (Gemma 2/3), so a column
    of down_proj is the written direction only up to that norm's rescaling."""
    attn_output_norm: str | None = None
    """The same for the attention output."""


def _dense(family: str) -> Architecture:
    """The common Llama-style layout: self_attn.o_proj and mlp.down_proj, both nn.Linear."""
    return Architecture(
        family=family,
        model_types=(family,),
        layers=("model.layers",),
        down_proj="mlp.down_proj",
        mixers=(_ATTENTION,),
        orientation="out_in",
        width_attribute="hidden_size",
    )


def _gemma(family: str, *model_types: str, layers: tuple[str, ...]) -> Architecture:
    return replace(
        _dense(family),
        model_types=model_types,
        layers=layers,
        mlp_output_norm="post_feedforward_layernorm",
        # Gemma's post_attention_layernorm normalises the attention output; in Llama the same
        # name is the norm in front of the MLP.
        attn_output_norm="post_attention_layernorm",
    )


def _hybrid(family: str, *model_types: str, layers: tuple[str, ...]) -> Architecture:
    mixers = (_ATTENTION, _GATED_DELTANET)
    return replace(_dense(family), model_types=model_types, layers=layers, mixers=mixers)


ARCHITECTURES: tuple[Architecture, ...] = (
    _dense("llama"),
    _dense("mistral"),
    _dense("qwen2"),
    _dense("qwen3"),
    _dense("phi3"),
    _gemma("gemma2", "gemma2", layers=("model.layers",)),
    # AutoModelForCausalLM builds Gemma3ForCausalLM for "gemma3_text" and the multimodal
    # Gemma3ForConditionalGeneration for "gemma3".
    _gemma("gemma3", "gemma3_text", "gemma3", layers=_NESTED_LAYERS),
    Architecture(
        family="gpt2",
        model_types=("gpt2",),
        layers=("transformer.h",),
        down_proj="mlp.c_proj",
        mixers=(TokenMixer("attention", "attn.c_proj"),),
        orientation="in_out",
        width_attribute="n_embd",
    ),
    # Qwen3-Next is refused when it has experts (its released checkpoints all do); with
    # num_experts=0 every layer has a dense MLP.
    _hybrid("qwen3_next", "qwen3_next", layers=("model.layers",)),
    # A "qwen3_5" config loads through AutoModelForCausalLM as Qwen3_5ForCausalLM on its text
    # config ("qwen3_5_text"); the multimodal class nests the decoder.
    _hybrid("qwen3_5", "qwen3_5_text", "qwen3_5", layers=_NESTED_LAYERS),
)

_BY_MODEL_TYPE = {model_type: entry for entry in ARCHITECTURES for model_type in entry.model_types}


def supported_families() -> list[str]:
    return sorted(entry.family for entry in ARCHITECTURES)


def architecture_for(model_or_config: PreTrainedModel | PretrainedConfig) -> Architecture:
    """The table entry for a model or its config.

    Raises UnsupportedArchitectureError for a model type outside the table and for any
    mixture-of-experts config, naming the model type and the supported families.
    """
    config = (
        model_or_config if isinstance(model_or_config, PretrainedConfig) else model_or_config.config
    )
    model_type = config.model_type
    text_config = config.get_text_config(decoder=True)
    for attribute in _EXPERT_COUNT_ATTRIBUTES:
        count = getattr(text_config, attribute, None)
        if isinstance(count, int) and count > 0:
            raise UnsupportedArchitectureError(
                f"model type {model_type!r} is a mixture of experts ({attribute}={count}); "
                "editing expert down-projections is not supported. Supported dense families: "
                + ", ".join(supported_families())
            )
    entry = _BY_MODEL_TYPE.get(model_type)
    if entry is None:
        raise UnsupportedArchitectureError(
            f"model type {model_type!r} is not in loopfix's architecture table. "
            "Supported families: " + ", ".join(supported_families())
        )
    return entry

"""The testbed tokenizer: one word per token, saved as a `PreTrainedTokenizerFast`."""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

from loopfix.lab.stargraph import BOS, EOS, PAD, TOKEN_ID


def is_testbed_tokenizer(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether a model speaks the star-graph vocabulary, token for token (the testbed's metrics
    mean nothing for any other model, whose ids would be read as node names)."""
    return tokenizer.get_vocab() == TOKEN_ID


def build_tokenizer() -> PreTrainedTokenizerFast:
    # No post-processor: prompts carry their own `<s>`, so the same text gives the same ids in
    # transformers, vLLM and any OpenAI-compatible server.
    core = Tokenizer(models.WordLevel(vocab=dict(TOKEN_ID), unk_token=PAD))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=PAD,
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )

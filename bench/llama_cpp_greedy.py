"""Greedy continuations from llama.cpp itself, for bench_gguf_export.py.

Runs under a Python that has llama.cpp's C API (the `llama-cpp-cffi` wheel, which ships a
prebuilt CPU llama.cpp; kept out of loopfix's environment, see bench_gguf_export.py). Reads
{"model", "prompts" (token ids), "max_new_tokens", "eos"} as JSON on stdin and writes the
generated ids per prompt as JSON on stdout. Prompt ids are fed as they are, so both sides see
the same tokens; each step takes the argmax of the last position's logits.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

os.environ.setdefault("LLAMA_CPP_BACKEND", "cpu")
from llama.llama_cpp import ffi, lib  # noqa: E402


def _decode(context: object, tokens: list[int]) -> None:
    ids = ffi.new("llama_token[]", tokens)
    if lib.llama_decode(context, lib.llama_batch_get_one(ids, len(tokens))) != 0:
        raise RuntimeError("llama_decode failed")


def greedy(context: object, vocabulary: int, prompt: list[int], limit: int, eos: int) -> list[int]:
    lib.llama_kv_self_clear(context)
    _decode(context, prompt)
    generated: list[int] = []
    while len(generated) < limit:
        logits = ffi.buffer(lib.llama_get_logits_ith(context, -1), 4 * vocabulary)
        token = int(np.frombuffer(logits, dtype=np.float32).argmax())
        generated.append(token)
        if token == eos:
            break
        _decode(context, [token])
    return generated


def main() -> None:
    job = json.load(sys.stdin)
    lib.llama_backend_init()
    model = lib.llama_model_load_from_file(job["model"].encode(), lib.llama_model_default_params())
    if model == ffi.NULL:
        raise SystemExit(f"llama.cpp could not load {job['model']}")
    settings = lib.llama_context_default_params()
    settings.n_ctx = settings.n_batch = 1024
    settings.n_threads = settings.n_threads_batch = 1  # threads spin-wait on shared cores
    context = lib.llama_init_from_model(model, settings)
    vocabulary = lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(model))
    limit, eos = job["max_new_tokens"], job["eos"]
    json.dump([greedy(context, vocabulary, ids, limit, eos) for ids in job["prompts"]], sys.stdout)


if __name__ == "__main__":
    main()

"""Greedy outputs from offline vLLM, run under .venv-vllm by the backend check:

    .venv-vllm/bin/python -m loopfix.consistency.vllm_worker IN.json OUT.json

IN: {"model": folder, "dtype": "float32", "prompts": [[ids]], "stops": [[texts]],
"max_new_tokens": N, "max_model_len": L}; OUT: {"outputs": [[ids]], "vllm": version, "dtype":
what vLLM ran}. The dtype is always given: left to "auto", vLLM runs a float32 model in
bfloat16 on CPUs with avx512_bf16.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(source: Path, target: Path) -> None:
    import vllm

    from loopfix.backends.base import Request
    from loopfix.backends.vllm import VLLMBackend
    from loopfix.records import DecodeSettings

    job = json.loads(source.read_text())
    backend = VLLMBackend.load(
        job["model"],
        batch_size=len(job["prompts"]),
        dtype=job["dtype"],
        max_model_len=job["max_model_len"],
    )
    settings = DecodeSettings(temperature=0.0, max_new_tokens=job["max_new_tokens"])
    outputs: list[list[int]] = [[] for _ in job["prompts"]]
    requests = [
        Request(ids=ids, stop=tuple(stop))
        for ids, stop in zip(job["prompts"], job["stops"], strict=True)
    ]
    for index, generation in backend.generate(requests, settings):
        outputs[index] = generation.tokens
    reply = {"outputs": outputs, "vllm": vllm.__version__, "dtype": backend.dtype}
    target.write_text(json.dumps(reply))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

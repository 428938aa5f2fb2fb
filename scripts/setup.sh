#!/usr/bin/env bash
# Create (or reuse) .venv inside the checkout and install loopfix into it.
#   bash scripts/setup.sh          runtime only
#   bash scripts/setup.sh --dev    plus the test and lint tools
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
if [ "${1:-}" = "--dev" ]; then
  extras="[dev]"
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

.venv/bin/python -m pip install --quiet -e ".${extras}"

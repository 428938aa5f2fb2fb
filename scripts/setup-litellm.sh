#!/usr/bin/env bash
# Create (or reuse) .venv-litellm: a LiteLLM proxy with loopfix's guardrail, in its own venv.
#   bash scripts/setup-litellm.sh
# Why a separate venv: every litellm[proxy] release this index can install (up to 1.108.7; the
# later ones need a `litellm-proxy` package it does not carry) pins huggingface-hub<2 and
# rich<14, while the transformers 5.25 in .venv needs huggingface-hub>=2.4: installing LiteLLM
# there would downgrade huggingface-hub under it. The guardrail needs none of torch or
# transformers: loopfix goes in --no-deps with the few packages its watcher imports.
# tests/integrations/test_litellm.py and bench/bench_litellm_guardrail.py find this venv by path.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-litellm
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
py="$venv/bin/python"

if ! LITELLM_LOCAL_MODEL_COST_MAP=True "$py" -c "import litellm.proxy.proxy_server" >/dev/null 2>&1; then
  "$py" -m pip install --quiet "litellm[proxy]${LOOPFIX_LITELLM_SPEC:->=1.100,<2}"
fi
# The watcher's own imports (detect: numpy; serve settings: pydantic, which litellm brings;
# metrics: prometheus-client), then loopfix itself without its torch/transformers pins.
"$py" -m pip install --quiet "numpy>=1.26" "prometheus-client>=0.20"
"$py" -m pip install --quiet --no-deps -e .
LITELLM_LOCAL_MODEL_COST_MAP=True "$py" -c "import litellm, loopfix.integrations.litellm; print('litellm ready in', '$venv')"

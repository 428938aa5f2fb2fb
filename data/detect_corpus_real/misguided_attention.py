"""Reasoning-model outputs saved in the public repository cpldcpu/MisguidedAttention, labelled by
hand in misguided_attention_labels.tsv. Writes misguided_attention.jsonl (run from the
repository root):

    python data/detect_corpus_real/misguided_attention.py SNAPSHOT_GIT_DIR

SNAPSHOT_GIT_DIR is a clone of https://github.com/cpldcpu/MisguidedAttention holding commit
COMMIT below. MisguidedAttention is a benchmark of altered riddles and logic puzzles (trolley,
river crossing, jugs, rope burning, bridge and torch, Monty Hall, knights and knaves ...); its
`eval/` folder keeps every model's answers as `output_queries_*.json`: `{"results": [{prompt_id,
prompt, llm, output: [3 or 5 samples], thinking: [same count, for models whose API returns the
reasoning]}]}`. Files read:

- eval/results_long_eval/output_queries_QwQ-32b.json (Qwen QwQ-32B via OpenRouter,
  temperature 0.6, max_tokens 32000 in eval/harness/query_config_reasoning.json),
  output_queries_phi4rp.json (Phi-4-reasoning-plus, temperature 0.7, max_tokens 30000),
  output_queries_glm32b.json (GLM-Z1-32B, temperature 0.7, max_tokens 16000),
  output_queries_q3_30ba3-think.json (Qwen3-30B-A3B with /think, temperature 0.6,
  max_tokens 30000),
  output_queries_r10528.json (DeepSeek-R1-0528), output_queries_q3_235b-think.json
  (Qwen3-235B-A22B thinking);
- eval/results_reasoning_models/output_queries_QwQ4B.json (QwQ-32B-Preview Q4_K_M run locally,
  temperature 1, max_tokens 4000; its reasoning is inline in `output`, there is no `thinking`).

An item is `results/I/thinking/J` (the reasoning of sample J of prompt I) or
`results/I/output/J` (the answer text). The text kept is that string; for a thinking item whose
sample also has a non-empty answer the answer follows after a blank line (the R1-0528 and
Qwen3-235B items have one; the other labelled thinking items ended without an answer). Texts
over 20,000 characters keep their last 20,000 (said in the note). The files record no
finish_reason and no token counts, and several thinking texts stop far below the configured
cap (provider limits), so `cut` is null.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from repo_part import item, labelled, show, write_part

REPO = "cpldcpu/MisguidedAttention"
COMMIT = "bbae011e1fb5ce239373cb2f381787baec0dd236"
MAX_CHARS = 20_000


def load(git_dir: Path, path: str):
    return json.loads(show(git_dir, COMMIT, path))


def output_of(data, item: str) -> tuple[str, dict]:
    """The text of one labelled item and its prompt record."""
    _, index, field, sample = item.split("/")
    record = data["results"][int(index)]
    text = record[field][int(sample)] or ""
    if field == "thinking":
        answer = record["output"][int(sample)] or ""
        if answer:
            text = text + "\n\n" + answer
    return text[-MAX_CHARS:], record


def main() -> None:
    items = []
    for label, data in labelled("misguided_attention", Path(sys.argv[1]), load):
        text, record = output_of(data, label.item)
        model = record["llm"]
        items.append(
            item(
                label,
                repo=REPO,
                commit=COMMIT,
                item_id=f"ma-{model}-{label.item.replace('results/', '').replace('/', '-')}",
                text=text,
                cut=None,
                model=model,
                prompt=record["prompt"],
            )
        )
    write_part("misguided_attention", items)


if __name__ == "__main__":
    main()

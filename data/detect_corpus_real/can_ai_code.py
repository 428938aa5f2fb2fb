"""Reasoning traces saved in the public repository the-crypt-keeper/can-ai-code, labelled by the
written rule (semantic_rule.md) in can_ai_code_labels.tsv. Writes can_ai_code.jsonl (run from
the repository root):

    python data/detect_corpus_real/can_ai_code.py SNAPSHOT_GIT_DIR

SNAPSHOT_GIT_DIR is a clone of https://github.com/the-crypt-keeper/can-ai-code holding commit
COMMIT below. can-ai-code is a coding benchmark (write a Python or JavaScript function from a
signature and a description: an assembler, a VM, string and list puzzles); `results/` keeps
every evaluated answer as `eval_*.ndjson`, one JSON object per line with the `answer` text (the
model's whole output, thinking included). Files read, chosen before any detector ran on them
(FILES below): every file of `results/r1/` (DeepSeek-R1 distills, Qwen 7B/14B/32B and Llama
8B/70B, official weights and AWQ, GGUF and EXL2 quantisations, greedy, the harness's "8k"
output cap) and of `results/reason/` (QwQ-32B-Preview, FuseO1-DeepSeekR1-QwQ-SkyT1-32B-Preview,
same settings) whose answers think (the Sky-T1 and deepseek-reasoner files hold short answers
without a reasoning trace and are left out), and the three `results/qwen3/*_chat_none_qwen3-think_*`
files (Qwen3-4B, Qwen3-8B, Qwen3-32B-AWQ in thinking mode under vLLM, temperature 0.6, top_p
0.95, max_tokens 32000): 6 answers each, 96 items.

An item is `line N` of its file. Texts over 20,000 characters keep their last 20,000 (said in
the note), the MisguidedAttention convention: a loop runs to the end, and the end is what the
rule reads. The files record no finish_reason, so `cut` is null.

The whole part is one source that the tune part never contains: its split is `unseen`
(build.py), evaluated apart from the held-out part (docs/detection.md).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from repo_part import item, labelled, last_chars, show, write_part

REPO = "the-crypt-keeper/can-ai-code"
COMMIT = "aa5a2f6d3fabb2aba9173902371cb8307e664c0f"
FILES = (
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_casperhansen-deepseek-r1-distill-llama-70b-awq_1737513822.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_casperhansen-deepseek-r1-distill-qwen-14b-awq_1737560908.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_casperhansen-deepseek-r1-distill-qwen-32b-awq_1737503465.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_deepseek-ai-DeepSeek-R1-Distill-Qwen-14B_1737561560.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_deepseek-ai-DeepSeek-R1-Distill-Qwen-7B_1737650984.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_ollama-deepseek-r1:14b-qwen-distill-q8-0_1737481030.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_ollama-deepseek-r1:32b-qwen-distill-q4-K-M_1737499249.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_ollama-deepseek-r1:70b-llama-distill-q4-K-M_1737573274.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_ollama-deepseek-r1:7b-qwen-distill-q8-0_1737650616.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_ollama-deepseek-r1:8b-llama-distill-q8-0_1737561612.ndjson",
    "results/r1/eval_senior_python-javascript_chat_none_greedy-openai-8k_waldie-DeepSeek-R1-Distill-Qwen-32B-4bpw-h6-exl2-main_1737513591.ndjson",
    "results/reason/eval_senior_python-javascript_chat_none_greedy-openai-8k_FuseAI-FuseO1-DeepSeekR1-QwQ-SkyT1-32B-Preview_1737652749.ndjson",
    "results/reason/eval_senior_python-javascript_chat_none_greedy-openai-8k_Qwen-QwQ-32B-Preview_1737652448.ndjson",
    "results/qwen3/eval_senior_python-javascript_chat_none_qwen3-think_Qwen-Qwen3-4B_1746299092.ndjson",
    "results/qwen3/eval_senior_python-javascript_chat_none_qwen3-think_Qwen3-32B-AWQ_1746299444.ndjson",
    "results/qwen3/eval_senior_python-javascript_chat_none_qwen3-think_Qwen3-8B_1746298603.ndjson",
)


def load(git_dir: Path, path: str) -> list[dict]:
    return [json.loads(line) for line in show(git_dir, COMMIT, path).splitlines() if line]


def model_of(path: str) -> str:
    """The model part of a results file name (between the sampler and the timestamp)."""
    stem = path.rsplit("/", 1)[-1].removesuffix(".ndjson").rsplit("_", 1)[0]
    return stem.rsplit("_", 1)[-1]


def main() -> None:
    items = []
    for label, rows in labelled("can_ai_code", Path(sys.argv[1]), load):
        row = rows[int(label.item.removeprefix("line "))]
        model = model_of(label.path)
        text, trimmed = last_chars(row["answer"])
        items.append(
            item(
                replace(label, note=label.note + trimmed),
                repo=REPO,
                commit=COMMIT,
                item_id=f"cac-{model}-{label.item.removeprefix('line ')}",
                text=text,
                cut=None,
                model=model,
                prompt=f"{row['name']} ({row['language']})",
            )
        )
    write_part("can_ai_code", items)


if __name__ == "__main__":
    main()

"""Reasoning traces saved in the public repository fit-alessandro-berti/pm-llm-benchmark,
labelled by the written rule (semantic_rule.md) in pm_llm_benchmark_labels.tsv. Writes
pm_llm_benchmark.jsonl (run from the repository root):

    python data/detect_corpus_real/pm_llm_benchmark.py SNAPSHOT_GIT_DIR

SNAPSHOT_GIT_DIR is a clone of https://github.com/fit-alessandro-berti/pm-llm-benchmark holding
commit COMMIT below (later commits delete most of these files). The benchmark asks 51 process
mining questions (event logs, process models, SQL, bias, open questions: mostly not arithmetic)
and keeps each model's whole answer, thinking included, as `answers/MODEL_QUESTION.txt`.
Files read, chosen by model before any detector ran on them (MODELS below): the eight smallest
open thinking models of four families, the ones our users ship: Qwen3 0.6B and 1.7B (Ollama),
DeepSeek-R1-Distill Qwen-1.5B and Llama-8B, Phi-4-mini-reasoning and Phi-4-reasoning, EXAONE
Deep 2.4B and 7.8B (Ollama, fp16); all 51 answers of each, 408 items. The harness's output cap
is 32,000 tokens unless a model's entry sets one (`answer.py`, `common.py` at COMMIT); the files
record neither the cap nor a finish reason, so `cut` is null. About half the files are
Windows-1252, not UTF-8 (`repo_part.show` reads both).

An item is one file. Texts over 20,000 characters keep their last 20,000 (said in the note), the
convention of the other long-trace parts: a loop runs to the end, and the end is what the rule
reads. The whole part is one source that the tune part never contains: its split is `unseen`
(build.py), evaluated apart from the held-out part (docs/detection.md).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from repo_part import item, labelled, last_chars, show, write_part

REPO = "fit-alessandro-berti/pm-llm-benchmark"
COMMIT = "7cc147191bd18e042034a4e20824acbcfadff8b3"
MODELS = (
    "qwen30.6b",
    "qwen31.7b",
    "deepseekdeepseek-r1-distill-qwen-1.5b",
    "deepseekdeepseek-r1-distill-llama-8b",
    "phi4-mini-reasoning",
    "phi4-reasoning",
    "exaone-deep2.4b-fp16",
    "exaone-deep7.8b-fp16",
)


def load(git_dir: Path, path: str) -> str:
    return show(git_dir, COMMIT, path)


def model_and_question(path: str) -> tuple[str, str]:
    """`answers/MODEL_catNN_MM_topic.txt` -> (MODEL, catNN_MM_topic)."""
    stem = path.removeprefix("answers/").removesuffix(".txt")
    model = next(name for name in MODELS if stem.startswith(name + "_"))
    return model, stem.removeprefix(model + "_")


def main() -> None:
    items = []
    for label, answer in labelled("pm_llm_benchmark", Path(sys.argv[1]), load):
        model, question = model_and_question(label.path)
        text, trimmed = last_chars(answer)
        items.append(
            item(
                replace(label, note=label.note + trimmed),
                repo=REPO,
                commit=COMMIT,
                item_id=f"pmb-{model}-{'_'.join(question.split('_')[:2])}",
                text=text,
                cut=None,
                model=model,
                prompt=question,
            )
        )
    write_part("pm_llm_benchmark", items)


if __name__ == "__main__":
    main()

"""Model outputs saved in the public repository thaotnguyen/thinking-llms-interp, labelled by
hand in thinking_llms_interp_labels.tsv. Writes thinking_llms_interp.jsonl (run from the
repository root):

    python data/detect_corpus_real/thinking_llms_interp.py SNAPSHOT_GIT_DIR

SNAPSHOT_GIT_DIR is a clone of https://github.com/thaotnguyen/thinking-llms-interp holding commit
COMMIT below. The files read are the generations of its `generate-responses` step (50 reasoning
and riddle prompts, max_tokens 1000; base models Llama-3.1-8B, Qwen2.5-14B, Qwen2.5-Math-1.5B and
DeepSeek-R1-Distill Qwen-1.5B / Llama-8B / Qwen-14B) and of its `steering` step (R1-Distill
Llama-8B and Qwen-32B with a reasoning-behaviour vector added or subtracted, 5 and 3 prompts;
R1-Distill Llama-8B on GSM8K prompts 0-100 with the backtracking vector added).
The text kept is the model's output: what follows `<｜Assistant｜>` for chat models, what follows
the echoed prompt for base models. Whether an output was cut at the cap is not recorded there,
so `cut` is null (unknown).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from repo_part import item, labelled, show, write_part

REPO = "thaotnguyen/thinking-llms-interp"
COMMIT = "24976ae307562cfe588aba84e727a96730dadaa0"


def load(git_dir: Path, path: str):
    return json.loads(show(git_dir, COMMIT, path))


def model_output(response: str, prompt: str) -> str:
    if "<｜Assistant｜>" in response:
        return response.split("<｜Assistant｜>", 1)[1]
    return response[len(prompt) :] if response.startswith(prompt) else response


def output_of(data, item: str) -> tuple[str, str]:
    """The output text and its prompt for one labelled item: its path in the file's JSON, `/`
    between keys (`12` in a generations list; `backtracking/0/positive` in a steering file;
    `3/backtracking/positive` in the GSM8K steering file)."""
    node = data
    for key in item.split("/"):
        node = node[int(key)] if isinstance(node, list) else node[key]
    if "full_response" in node:
        prompt = node["original_message"]["content"]
        return model_output(node["full_response"], prompt), prompt
    response = node["response"]
    prompt = response.split("<｜User｜>", 1)[1].split("<｜Assistant｜>", 1)[0]
    return model_output(response, prompt), prompt


def main() -> None:
    items = []
    for label, data in labelled("thinking_llms_interp", Path(sys.argv[1]), load):
        text, prompt = output_of(data, label.item)
        model = Path(label.path).stem.split("responses_")[-1].split("results_")[-1]
        items.append(
            item(
                label,
                repo=REPO,
                commit=COMMIT,
                item_id=f"tli-{model}-{label.item.replace('/', '-')}",
                text=text,
                cut=None,
                model=model,
                prompt=prompt,
                category="steered-generation" if "steering" in label.path else "model-generation",
            )
        )
    write_part("thinking_llms_interp", items)


if __name__ == "__main__":
    main()

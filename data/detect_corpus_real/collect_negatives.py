"""Hard negatives from real text not written by us: program outputs and files of installed
packages. Writes negatives.jsonl (run with the project's .venv python; outputs depend on the
machine, so the committed negatives.jsonl is the record)."""

import importlib.metadata as md
import json
import pathlib
import subprocess
import sys
import sysconfig

items = []
LIMIT = 6000


def add(id, text, source, note, category):
    cut_note = ""
    if len(text) > LIMIT:
        text = text[:LIMIT]
        cut_note = f" (first {LIMIT} characters kept)"
    items.append(
        dict(
            id=id,
            text=text,
            label="clean",
            kind="none",
            cut=None,
            source=source,
            category=category,
            note=note + cut_note,
        )
    )


py = sys.executable


def run(*command: str) -> str:
    return subprocess.run(command, capture_output=True, text=True).stdout


ver = sys.version.split()[0]
add(
    "prog-calendar-2024",
    run(py, "-m", "calendar", "2024"),
    f"CPython {ver} `python -m calendar 2024` output",
    "year calendar: month tables with the weekday header repeated 12 times",
    "calendar",
)
add(
    "prog-zen",
    run(py, "-c", "import this"),
    f"CPython {ver} `python -c 'import this'` output",
    "aphorisms sharing the frame 'X is better than Y'",
    "refrain",
)
lib = pathlib.Path(sysconfig.get_paths()["stdlib"])
add(
    "prog-tokenize-keyword",
    run(py, "-m", "tokenize", str(lib / "keyword.py")),
    f"CPython {ver} `python -m tokenize Lib/keyword.py` output",
    "token table: one line per token with changing positions",
    "counter-table",
)
cp = (lib / "encodings/cp1252.py").read_text()
start = cp.index("decoding_table = (")
add(
    "file-cp1252-table",
    cp[start : start + LIMIT],
    f"CPython {ver} Lib/encodings/cp1252.py",
    "decoding table: one line per code point, counter plus a distinct character name",
    "counter-table",
)
ent = (lib / "html/entities.py").read_text()
s = ent.index("name2codepoint = {")
add(
    "file-html-entities",
    ent[s : s + LIMIT],
    f"CPython {ver} Lib/html/entities.py",
    "dict of entity names, one per line",
    "code",
)
ks = (lib / "keyword.py").read_text()
add(
    "file-keyword-py",
    ks,
    f"CPython {ver} Lib/keyword.py",
    "list of quoted keywords, one per line",
    "code",
)
add(
    "prog-pip-list",
    run(py, "-m", "pip", "list", "--disable-pip-version-check"),
    "loopfix .venv `pip list` output (2026-12-01)",
    "table of ~200 distinct packages",
    "long-list",
)
add(
    "prog-ls-usr-bin",
    run("ls", "-la", "/usr/bin"),
    "`ls -la /usr/bin` on the build machine (Debian)",
    "directory listing, distinct rows",
    "table",
)
add(
    "prog-dpkg-l",
    run("dpkg", "-l"),
    "`dpkg -l` on the build machine (Debian)",
    "package table with repeated status columns",
    "table",
)
for dist in ("tqdm", "charset-normalizer", "narwhals", "pytest-timeout", "optuna", "torch"):
    meta = md.metadata(dist)
    body = meta.get_payload() or ""
    add(
        f"doc-{dist}-readme",
        body,
        f"PyPI {dist} {md.version(dist)} METADATA (README)",
        "package README: tables, lists, code, diagrams",
        "readme",
    )
with open(__file__.replace("collect_negatives.py", "negatives.jsonl"), "w") as f:
    for it in items:
        f.write(json.dumps(it, ensure_ascii=False) + "\n")
print(len(items), [len(i["text"]) for i in items])

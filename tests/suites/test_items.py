import json
from pathlib import Path

import pytest

from loopfix.suites import SuiteError, load_suite, read_suite_file


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_reads_prompts_chats_answers_and_default_checkers(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "s.jsonl",
        [
            {"id": "a", "prompt": "2+2?", "answer": 4},
            "",
            {"id": "b", "messages": [{"role": "user", "content": "hi"}], "checker": "regex:h+i"},
            {"id": "c", "prompt": "free", "meta": {"source": "x"}},
        ],
    )
    a, b, c = read_suite_file(path)
    assert (a.answer, a.checker) == ("4", "exact")
    assert b.messages == [{"role": "user", "content": "hi"}] and b.checker == "regex:h+i"
    assert c.checker is None and c.meta == {"source": "x"}
    assert [item.id for item in load_suite(str(path), n=2)] == ["a", "b"]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"id": "x", "prompt": 3}', "prompt"),
        ('{"prompt": "p"}', "id"),
        ('{"id": "x"}', "prompt"),
        ('{"id": "x", "prompt": "p", "messages": [{"role": "user", "content": "c"}]}', "prompt"),
        ('{"id": "x", "messages": [{"role": "user"}]}', "messages"),
        ('{"id": "x", "prompt": "p", "checker": "fuzzy"}', "checker"),
        ('{"id": "x", "prompt": "p", "checker": "regex:("}', "checker"),
        ('{"id": "x", "prompt": "p", "meta": []}', "meta"),
        ('{"id": "x", "prompt": "p", "anwser": "1"}', "anwser"),
        ('{"id": "a", "prompt": "again"}', "id"),  # duplicate of line 1
        # Issue 56: what generation or a checker reads fails here, before any model runs.
        ('{"id": "x", "prompt": ""}', "prompt"),
        ('{"id": "x", "prompt": " \\n"}', "prompt"),
        ('{"id": "x", "prompt": "p", "checker": "tasks", "meta": {"family": "count"}}', "meta"),
        (
            '{"id": "x", "prompt": "p", "checker": "sequence", "meta": {"given": "17, 20"}}',
            "meta.given",
        ),
        (
            '{"id": "x", "prompt": "p", "checker": "stargraph", "meta": {"graph": [1, 2]}}',
            "meta.graph",
        ),
        (
            '{"id": "x", "prompt": "p", "checker": "stargraph", "meta": {"graph": '
            '{"root": 0, "arms": "12", "edges": [], "target_arm": 0}}}',
            "meta.graph",
        ),
    ],
)
def test_malformed_line_names_file_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    path = write_lines(tmp_path / "bad.jsonl", ['{"id": "a", "prompt": "ok"}', line])
    with pytest.raises(SuiteError, match=rf"bad\.jsonl:2: field '{field}'"):
        read_suite_file(path)


def test_invalid_json_and_unknown_suite(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "bad.jsonl", ['{"id": "a", "prompt": "ok"}', '{"id": '])
    with pytest.raises(SuiteError, match=r"bad\.jsonl:2: not valid JSON"):
        read_suite_file(path)
    with pytest.raises(SuiteError, match="neither a built-in suite"):
        load_suite(str(tmp_path / "missing.jsonl"))

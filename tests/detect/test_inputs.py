import io
import json

from loopfix.detect.inputs import InputError, TextInput, path_name, read_inputs, set_path


def test_jsonl_fields_openai_choices_and_bad_lines(tmp_path):
    path = tmp_path / "outputs.jsonl"
    lines = [
        json.dumps({"id": "a", "text": "plain"}),
        '{"id": "b", "text": "broken',
        "",
        json.dumps(
            {
                "id": "c",
                "choices": [
                    {"message": {"content": "answer", "reasoning_content": "think"}},
                    {"text": "completion"},
                ],
            }
        ),
        json.dumps(
            {
                "text": "no id",
                "choices": [{"message": {"content": [{"type": "text", "text": "part"}]}}],
            }
        ),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    items = list(read_inputs(str(path)))
    errors = [i for i in items if isinstance(i, InputError)]
    assert len(errors) == 1 and (errors[0].line, errors[0].column) == (2, 21)
    assert str(errors[0]).startswith("line 2, column 21: Unterminated string")
    texts = [(i.id, i.text) for i in items if isinstance(i, TextInput)]
    assert texts == [
        ("a", "plain"),
        ("c:choices[0].message.reasoning_content", "think"),
        ("c:choices[0].message.content", "answer"),
        ("c:choices[1].text", "completion"),
        ("5", "no id"),
        ("5:choices[0].message.content", "part"),
    ]


def test_other_field_and_text_files(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"id": 1, "output": "x"}) + "\n", encoding="utf-8")
    assert [i.text for i in read_inputs(str(path), "output")] == ["x"]
    txt = tmp_path / "trace.txt"
    txt.write_text("one text\nover lines", encoding="utf-8")
    assert list(read_inputs(str(txt))) == [TextInput("trace", "one text\nover lines")]


def test_stdin(monkeypatch):
    monkeypatch.setattr(
        "sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"text": "a"}\n{"text": "b"}\n'))
    )
    assert [i.text for i in read_inputs("-")] == ["a", "b"]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"just text")))
    assert [i.id for i in read_inputs("-")] == ["stdin"]


def test_paths():
    data = {"choices": [{"message": {"content": "old"}}]}
    set_path(data, ("choices", 0, "message", "content"), "new")
    assert data["choices"][0]["message"]["content"] == "new"
    assert path_name(("choices", 0, "message", "content")) == "choices[0].message.content"


def test_cut_from_finish_reason(tmp_path):
    data = tmp_path / "responses.jsonl"
    lines = [
        {"id": "r", "text": "a", "finish_reason": "length"},
        {"id": "s", "text": "b"},
        {
            "id": "c",
            "choices": [
                {
                    "message": {"reasoning_content": "think", "content": "x"},
                    "finish_reason": "length",
                },
                {"text": "y", "finish_reason": "stop"},
            ],
        },
    ]
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cuts = {item.id: item.cut for item in read_inputs(str(data))}
    assert cuts == {
        "r": True,
        "s": None,
        "c:choices[0].message.reasoning_content": False,
        "c:choices[0].message.content": True,
        "c:choices[1].text": False,
    }

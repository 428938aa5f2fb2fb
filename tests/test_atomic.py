import json
from pathlib import Path

import pytest

from loopfix.atomic import (
    OutputError,
    atomic_folder,
    atomic_writer,
    check_output_path,
    write_json_atomic,
)


def test_write_json_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_json_atomic(path, {"a": 1})
    write_json_atomic(path, {"b": 2})
    assert json.loads(path.read_text()) == {"b": 2}
    assert list(tmp_path.iterdir()) == [path]


def test_an_interrupted_write_leaves_the_earlier_file_and_no_partial(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("earlier\n")
    with pytest.raises(KeyboardInterrupt):
        with atomic_writer(path) as handle:
            handle.write("half of the new\n")
            raise KeyboardInterrupt
    assert path.read_text() == "earlier\n"
    assert list(tmp_path.iterdir()) == [path]


def test_a_folder_appears_whole_and_replaces_the_old_one(tmp_path: Path) -> None:
    out = tmp_path / "model"
    with atomic_folder(out) as work:
        (work / "a").write_text("1")
        assert not out.exists()
    with pytest.raises(RuntimeError):
        with atomic_folder(out) as work:
            (work / "b").write_text("2")
            raise RuntimeError("save failed")
    assert [p.name for p in out.iterdir()] == ["a"]
    with atomic_folder(out) as work:
        (work / "b").write_text("2")
    assert [p.name for p in out.iterdir()] == ["b"]
    assert list(tmp_path.iterdir()) == [out]


def test_outputs_that_are_inputs_or_of_the_wrong_kind_are_refused(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("{}\n")
    with pytest.raises(OutputError, match="also an input"):
        check_output_path(data, data)
    with pytest.raises(OutputError, match="is a file"):
        check_output_path(data, folder=True)
    with pytest.raises(OutputError, match="is a folder"):
        check_output_path(tmp_path)
    check_output_path(tmp_path / "new.jsonl", data)


def test_an_unwritable_place_is_an_output_error(tmp_path: Path) -> None:
    # A file where a folder should be fails for every user, root included (chmod does not).
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    with pytest.raises(OutputError, match="cannot write"):
        write_json_atomic(blocker / "summary.json", {})
    with pytest.raises(OutputError, match="cannot write"):
        with atomic_folder(blocker / "model"):
            pass

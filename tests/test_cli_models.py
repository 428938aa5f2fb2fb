"""`loopfix models list|path` on the bundled models and on a folder, through the CLI."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.models import load_model, loading, tiny_model, tiny_tokenizer


def invoke(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


def test_models_path_prints_a_folder_that_loads(tmp_path: Path) -> None:
    result = invoke("models", "path", "loopfix:stargraph")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    folder = Path(result.stdout.strip())  # type: ignore[attr-defined]
    assert folder == loading.testbed_dir() / "stargraph"
    model, _ = load_model(str(folder), device="cpu")
    assert model.config.model_type == "llama"
    tiny_model("llama").save_pretrained(tmp_path / "mine")
    tiny_tokenizer().save_pretrained(tmp_path / "mine")
    mine = invoke("models", "path", str(tmp_path / "mine"))
    assert mine.stdout.strip() == str(tmp_path / "mine")  # type: ignore[attr-defined]


def test_models_path_of_what_has_no_folder_is_one_line() -> None:
    for spec, needle in (
        ("loopfix:no-such-model", "unknown model loopfix:no-such-model"),
        ("some-org/some-model", "a hub id has no folder"),
    ):
        result = invoke("models", "path", spec)
        assert result.exit_code == 2  # type: ignore[attr-defined]
        lines = result.stderr.splitlines()  # type: ignore[attr-defined]
        assert len(lines) == 1 and needle in lines[0], lines


def test_models_list_names_every_bundled_model() -> None:
    result = invoke("models", "list")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    names = [line.split("\t")[0] for line in result.stdout.splitlines()]  # type: ignore[attr-defined]
    assert names[:2] == ["loopfix:stargraph", "loopfix:stargraph-clean"]
    assert {"loopfix:smollm2", "loopfix:gemma3-270m", "loopfix:smollm2-think"} <= set(names)

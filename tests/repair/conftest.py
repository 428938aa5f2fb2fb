from pathlib import Path

import pytest

from loopfix.models import tiny_model, tiny_tokenizer


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama saved as a local HF folder (it loops at greedy)."""
    folder = tmp_path_factory.mktemp("tiny") / "llama"
    tiny_model("llama").save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder

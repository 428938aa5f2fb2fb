from pathlib import Path

from transformers import AutoTokenizer

from loopfix.lab.stargraph import TOKEN_ID, make_graphs, render
from loopfix.lab.tokenizer import build_tokenizer


def test_tokenizer_round_trips_prompts_through_a_saved_folder(tmp_path: Path) -> None:
    build_tokenizer().save_pretrained(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    for graph in make_graphs(0, 20, 3, 3):
        ids = graph.prompt_ids()
        text = render(ids)
        assert tokenizer(text)["input_ids"] == ids  # no special tokens added on top
        assert tokenizer.decode(ids) == text
    assert tokenizer.pad_token_id == TOKEN_ID["<pad>"]
    assert tokenizer.eos_token_id == TOKEN_ID["</s>"]
    assert tokenizer.padding_side == "left"

"""Text as tokens with character offsets: the built-in segmentation, or a tokenizer's.

The built-in segmentation is deterministic and needs no model: special tokens (`<|im_end|>`,
`<｜end▁of▁sentence｜>`, `</think>`) stay whole, each CJK character is a token, digit runs,
letter runs (with inner apostrophes) and runs of one repeated punctuation character (`----`,
`...`) are tokens, each newline is a token (line structure matters to loops), other whitespace
separates tokens and is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .ids import as_ids

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(
    r"<\|[^\s<>|]{1,64}\|>"  # ChatML-style special tokens
    r"|<｜[^\s<>｜]{1,64}｜>"  # DeepSeek-style special tokens (full-width bars)
    r"|</?[A-Za-z_][\w-]{0,31}>"  # tags such as <think> and </s>
    rf"|[{_CJK}]"
    r"|\d+"
    rf"|(?:(?![{_CJK}])[^\W\d_])+(?:['’](?:(?![{_CJK}])[^\W\d_])+)*"
    r"|\r?\n"
    r"|([^\w\s]|_)\1*"
)
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class TokenizedText:
    """Token ids with the character span of each token, and the classes the tiers need.

    `volatile` marks number tokens (masked by the near tier), `words` marks tokens that carry
    content (letters or CJK; not numbers, punctuation or newlines).
    """

    text: str
    ids: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    volatile: np.ndarray
    words: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def char_of(self, token: int) -> int:
        """Character offset where token `token` starts (`len(text)` past the end)."""
        return int(self.starts[token]) if token < len(self.ids) else len(self.text)

    def token_at(self, char: int) -> int:
        """Index of the first token that starts at or after character `char`."""
        return int(np.searchsorted(self.starts, char, side="left"))

    def number_in(self, start: int, end: int) -> int | None:
        """The integer written by tokens `[start, end)` (None if they hold no digit)."""
        piece = self.text[int(self.starts[start]) : int(self.ends[end - 1])]
        digits = "".join(_DIGITS.findall(piece))
        return int(digits) if digits else None


def _is_word(piece: str) -> bool:
    return any(ch.isalpha() for ch in piece)


def _is_number(piece: str) -> bool:
    stripped = piece.strip()
    return bool(stripped) and stripped.isdigit()


def split_text(text: str) -> TokenizedText:
    """The built-in segmentation of `text` (see the module docstring)."""
    matches = list(_TOKEN.finditer(text))
    pieces = [m.group() for m in matches]
    return TokenizedText(
        text=text,
        ids=as_ids(pieces),
        starts=np.array([m.start() for m in matches], dtype=np.int64),
        ends=np.array([m.end() for m in matches], dtype=np.int64),
        volatile=np.array([p[0].isdigit() for p in pieces], dtype=bool),
        words=np.array([_is_word(p) and not p.startswith("<") for p in pieces], dtype=bool),
    )


def tokenize_with(text: str, tokenizer: Any) -> TokenizedText:
    """Tokenize `text` with a model tokenizer: an HF tokenizer (offsets from the fast tokenizer)
    or any object with `encode(text) -> ids` and `decode(ids) -> str` (offsets from decoding
    each token, exact for tokenizers whose tokens decode independently).

    Every token that decodes to digits only (a digit token) is volatile, so the near tier sees
    one number class, however the tokenizer splits numbers.
    """
    ids, starts, ends = _encode(text, tokenizer)
    pieces = [text[s:e] for s, e in zip(starts, ends, strict=True)]
    return TokenizedText(
        text=text,
        ids=np.asarray(ids, dtype=np.int64),
        starts=np.asarray(starts, dtype=np.int64),
        ends=np.asarray(ends, dtype=np.int64),
        volatile=np.array([_is_number(p) for p in pieces], dtype=bool),
        words=np.array([_is_word(p) for p in pieces], dtype=bool),
    )


def _encode(text: str, tokenizer: Any) -> tuple[list[int], list[int], list[int]]:
    if getattr(tokenizer, "is_fast", False):
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = encoded["offset_mapping"]
        return list(encoded["input_ids"]), [s for s, _ in offsets], [e for _, e in offsets]
    ids = list(tokenizer.encode(text))
    starts, ends, position = [], [], 0
    for token in ids:
        piece = tokenizer.decode([token])
        found = text.find(piece, position) if piece else -1
        start = found if found >= 0 else position
        starts.append(start)
        position = min(len(text), start + len(piece))
        ends.append(position)
    return ids, starts, ends

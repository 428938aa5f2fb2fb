"""The guard core: per-row state kept incrementally, and the vLLM-shaped batch interface.

A guard watches a batch of sequences ("rows") and rewrites each step's logits. The batch
interface mirrors vLLM's V1 logits processors, so both adapters stay thin:

- `add(row, prompt, output, params, ...)` starts a sequence in a row (vLLM: `BatchUpdate.added`);
- `remove`, `move`, `swap` follow the batch as it is reshuffled;
- `extend(row, tokens)` feeds newly generated tokens (vLLM: before each forward pass);
- `apply(logits)` rewrites the `(rows, vocab)` logits in place and returns them;
- `rollback(row, length)` keeps the first `length` generated tokens (the rescue guard's undo).

Subclasses implement three hooks on one row: `start` (fresh state, before any token; on a
rollback `row.state` still holds the old state, so a guard can carry a ledger across),
`observe` (one token was appended to `row.tokens`) and `adjust` (rewrite that row's logits).
A rollback replays the kept tokens through `start`/`observe`; that costs O(kept tokens) once per
rescue, which keeps every guard's per-token state simple.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from pydantic import BaseModel, ConfigDict

from loopfix.errors import LoopfixError

__all__ = ["Guard", "GuardContext", "GuardError", "GuardParams", "Row"]


class GuardError(LoopfixError, ValueError):
    """An unknown guard or a bad guard argument; the message names the guard and the parameter."""


class GuardParams(BaseModel):
    """Base of every guard's parameters: frozen, and unknown fields are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


@dataclass(frozen=True)
class GuardContext:
    """What guards may need to know about the model's vocabulary.

    vocab_size: width of the logits.
    token_text: decoded text of one token id (DRY's sequence breakers); None when unknown.
    encode: text -> token ids (think-block markers); None when unknown.
    """

    vocab_size: int
    token_text: Callable[[int], str] | None = None
    encode: Callable[[str], list[int]] | None = None
    _containing: dict[tuple[str, ...], frozenset[int]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def tokens_containing(self, texts: tuple[str, ...], guard: str) -> frozenset[int]:
        """Every token whose text contains one of `texts` (cached: one vocabulary pass)."""
        if texts not in self._containing:
            if self.token_text is None:
                raise ValueError(f"guard {guard!r} needs a tokenizer to map {texts!r} to tokens")
            text = self.token_text
            self._containing[texts] = frozenset(
                token
                for token in range(self.vocab_size)
                if any(part in text(token) for part in texts)
            )
        return self._containing[texts]

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, vocab_size: int | None = None) -> GuardContext:
        size = vocab_size if vocab_size is not None else len(tokenizer)
        return cls(
            vocab_size=size,
            token_text=lambda token: tokenizer.decode([token]),
            encode=lambda text: list(tokenizer.encode(text, add_special_tokens=False)),
        )


@dataclass
class Row:
    """One sequence a guard watches: its parameters, tokens (prompt first) and guard state.

    temperature: the sampler's own temperature for this row (0 = greedy); temperature guards
        need it to turn their target temperature into a logit scale.
    generator: this row's random source, used only when a guard must sample by itself.
    warned: the model's own early warning (`engine.warning`) has fired for this sequence.
    """

    params: Any
    tokens: list[int]
    prompt_length: int
    temperature: float = 0.0
    generator: torch.Generator | None = None
    state: Any = None
    warned: bool = False

    @property
    def output(self) -> list[int]:
        return self.tokens[self.prompt_length :]

    @property
    def output_length(self) -> int:
        return len(self.tokens) - self.prompt_length


class Guard(ABC):
    """A decode-time mitigation over a batch of rows; see the module docstring."""

    name: ClassVar[str]
    Params: ClassVar[type[GuardParams]]

    def __init__(self, params: GuardParams | None = None, context: GuardContext | None = None):
        self.params = params if params is not None else self.Params()
        self.context = context
        self.rows: dict[int, Row] = {}

    # -- batch bookkeeping (vLLM's BatchUpdate: removed, then added, then moved) -------------
    def add(
        self,
        row: int,
        prompt: Sequence[int],
        output: Sequence[int] = (),
        params: GuardParams | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> None:
        generator = None
        if seed is not None:
            generator = torch.Generator().manual_seed(seed)
        state = Row(
            params if params is not None else self.params,
            list(prompt),
            len(prompt),
            temperature,
            generator,
        )
        self.rows[row] = state
        self._restart(state)
        self.extend(row, output)

    def remove(self, row: int) -> None:
        self.rows.pop(row, None)

    def move(self, source: int, target: int) -> None:
        if source in self.rows:
            self.rows[target] = self.rows.pop(source)
        else:
            self.rows.pop(target, None)

    def swap(self, first: int, second: int) -> None:
        a, b = self.rows.pop(first, None), self.rows.pop(second, None)
        if a is not None:
            self.rows[second] = a
        if b is not None:
            self.rows[first] = b

    # -- per-token work ------------------------------------------------------------------------
    def extend(self, row: int, tokens: Sequence[int]) -> None:
        state = self.rows.get(row)
        if state is None:
            return
        for token in tokens:
            state.tokens.append(int(token))
            self.observe(state, int(token))

    def warn(self, row: int) -> None:
        """The model's own early warning fired for `row`: it stays warned through rollbacks."""
        state = self.rows.get(row)
        if state is not None:
            state.warned = True

    def rollback(self, row: int, output_length: int) -> None:
        """Keep the first `output_length` generated tokens of `row`, replayed into fresh state."""
        state = self.rows[row]
        kept = state.tokens[state.prompt_length : state.prompt_length + output_length]
        del state.tokens[state.prompt_length :]
        self._restart(state)
        self.extend(row, kept)

    def _restart(self, state: Row) -> None:
        prompt = state.tokens[: state.prompt_length]
        del state.tokens[:]
        state.state = self.start(state)
        for token in prompt:
            state.tokens.append(token)
            self.observe(state, token)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        """Rewrite the logits of every watched row (in place) and return them."""
        for index, state in self.rows.items():
            if index < logits.shape[0]:
                self.adjust(state, logits[index])
        return logits

    def is_argmax_invariant(self) -> bool:
        """True when the guard never changes which token is most likely (vLLM may skip it)."""
        return False

    # -- what each guard implements ----------------------------------------------------------------
    @abstractmethod
    def start(self, row: Row) -> Any:
        """Fresh per-row state, before any token (prompt tokens arrive through `observe`)."""

    def observe(self, row: Row, token: int) -> None:  # noqa: B027 - most guards need no history
        """`token` was just appended to `row.tokens` (prompt tokens included)."""

    @abstractmethod
    def adjust(self, row: Row, logits: torch.Tensor) -> None:
        """Rewrite one row's logits (a 1-D view) in place."""

"""General ability: perplexity on plain text that no suite or branch comes from.

The text is cut into non-overlapping windows of `window` tokens (each window starts with no
context: the same for base and edited model, so the ratio compares like with like); the
perplexity is exp(mean next-token negative log-likelihood) over every predicted token.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from loopfix.patch import EditRequest, build_patch, patched
from loopfix.repair.config import RepairConfig
from loopfix.repair.errors import RepairInputError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["WINDOW", "GeneralAbility", "general_ability", "perplexity", "text_windows"]

WINDOW = 256


def text_windows(
    path: Path, tokenizer: PreTrainedTokenizerBase, window: int, max_tokens: int
) -> torch.Tensor:
    """[windows, window] token ids of the first `max_tokens` tokens of the text file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RepairInputError(f"{path}: cannot read the perplexity text ({error})") from None
    ids = tokenizer(text, add_special_tokens=False)["input_ids"][:max_tokens]
    count = len(ids) // window
    if count == 0:
        raise RepairInputError(
            f"{path}: {len(ids)} tokens, fewer than one window of {window}: the perplexity "
            "check needs a longer text"
        )
    return torch.tensor(ids[: count * window]).view(count, window)


@torch.inference_mode()
def perplexity(model: PreTrainedModel, windows: torch.Tensor, batch_size: int = 4) -> float:
    total, count = 0.0, 0
    for start in range(0, len(windows), batch_size):
        ids = windows[start : start + batch_size].to(model.device)
        logits = model(input_ids=ids).logits[:, :-1].float()
        nll = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="sum"
        )
        total, count = total + float(nll), count + ids[:, 1:].numel()
    return float(torch.exp(torch.tensor(total / count)))


class GeneralAbility:
    """The plain text's windows and the base model's perplexity on them, measured once, so
    that every screened candidate and the chosen edit are priced against the same base."""

    def __init__(self, model: PreTrainedModel, windows: torch.Tensor) -> None:
        self.model, self.windows = model, windows
        self.base = perplexity(model, windows)

    def of(self, requests: Sequence[EditRequest]) -> dict[str, float]:
        """Base and edited perplexity, their ratio and the tokens they were measured on."""
        with patched(self.model, build_patch(self.model, requests)):
            edited = perplexity(self.model, self.windows)
        return {
            "base": self.base,
            "patched": edited,
            "ratio": edited / self.base,
            "tokens": self.windows.numel(),
        }


def general_ability(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, config: RepairConfig
) -> GeneralAbility | None:
    """The check on `config.perplexity_text`; None when no text is configured."""
    if config.perplexity_text is None:
        return None
    windows = text_windows(config.perplexity_text, tokenizer, WINDOW, config.perplexity_tokens)
    return GeneralAbility(model, windows)

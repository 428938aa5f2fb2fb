"""Distil the programmatic teacher (`lab.think_teacher`) into a pretrained chat model with LoRA:
the thinking model `loopfix:smollm2-think` is SmolLM2-135M-Instruct plus the delta this writes.

The base weights stay frozen; every targeted linear layer of the chosen decoder layers gets
factors A (rank, in) and B (out, rank), B starting at zero, so step 0 is the base model. Each
step draws `batch_size` problems from the training stream (problem k of step s depends on
(seed, s, k) only, never on the held-out suite seed), renders the question with the model's
chat template and trains on the teacher's completion (trace and end-of-turn token) only.

Resumable: every `checkpoint_every` steps the factors, the optimizer and the step go to
`OUT/resume.pt`; a rerun with the same config continues from there, and since the data of a
step depends only on its number, a resumed run equals an uninterrupted one up to float
non-associativity across thread counts. The end writes `OUT/delta.safetensors`
(`models.delta` format, float32) and `OUT/provenance.json`.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save
from torch import nn

from loopfix.atomic import atomic_writer, write_json_atomic
from loopfix.errors import LoopfixError
from loopfix.lab.think_config import THINK_HELD_OUT_SEED, ThinkTrainConfig
from loopfix.lab.think_teacher import INSTRUCTION, ThinkProblem, make_problem, trace
from loopfix.models.delta import DELTA_FILE, file_sha256

__all__ = [
    "LoRALinear",
    "ThinkTrainError",
    "add_lora",
    "render_example",
    "train_think",
    "training_problem",
]

_PROBLEMS_PER_SEED = 100_000
_PROBLEMS_PER_STEP = 64  # ThinkTrainConfig.batch_size is at most this


class ThinkTrainError(LoopfixError, ValueError):
    """A training run that cannot start: one line for the command line."""


class LoRALinear(nn.Module):
    """A frozen linear layer plus `scale * B(A(x))`."""

    def __init__(self, base: nn.Linear, rank: int, scale: float, generator: torch.Generator):
        super().__init__()
        self.base, self.scale = base, scale
        bound = 1 / math.sqrt(base.in_features)
        self.lora_A = nn.Parameter(
            (torch.rand(rank, base.in_features, generator=generator) * 2 - 1) * bound
        )
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.scale * ((x @ self.lora_A.T) @ self.lora_B.T)


def add_lora(model: nn.Module, config: ThinkTrainConfig) -> dict[str, LoRALinear]:
    """Wrap the targeted linear layers of layers >= first_layer; {weight name: wrapper}."""
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    generator = torch.Generator().manual_seed(config.seed)
    wrapped: dict[str, LoRALinear] = {}
    for name, module in list(model.named_modules()):
        parent_name, _, attribute = name.rpartition(".")
        if attribute not in config.targets or not isinstance(module, nn.Linear):
            continue
        layer = _layer_index(name)
        if layer is None or layer < config.first_layer:
            continue
        lora = LoRALinear(module, config.rank, config.alpha / config.rank, generator)
        setattr(model.get_submodule(parent_name), attribute, lora)
        wrapped[f"{name}.weight"] = lora
    if not wrapped:
        raise ThinkTrainError(
            f"no linear layer named {', '.join(config.targets)} in decoder layer "
            f"{config.first_layer} or above"
        )
    return wrapped


def _layer_index(name: str) -> int | None:
    parts = name.split(".")
    for before, after in zip(parts, parts[1:], strict=False):
        if before == "layers" and after.isdigit():
            return int(after)
    return None


def training_problem(seed: int, step: int, position: int) -> ThinkProblem:
    """Problem `position` of training step `step`: from suite seeds 1000 + seed * 1000 + ...,
    far from the held-out seed."""
    index = step * _PROBLEMS_PER_STEP + position
    problem_seed = 1000 + seed * 1000 + index // _PROBLEMS_PER_SEED
    assert problem_seed != THINK_HELD_OUT_SEED
    return make_problem(problem_seed, index % _PROBLEMS_PER_SEED)


def render_example(tokenizer: Any, question: str, completion: str) -> tuple[list[int], int]:
    """Token ids of the chat (question, completion + end of turn) and where the completion
    starts: the prompt is rendered exactly as the `think` suite renders it for a scan."""
    messages = [{"role": "user", "content": f"{question}\n{INSTRUCTION}"}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    prompt_ids = list(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    end = tokenizer.eos_token or ""
    completion_ids = list(tokenizer(completion + end, add_special_tokens=False)["input_ids"])
    return prompt_ids + completion_ids, len(prompt_ids)


def _batch(
    tokenizer: Any, config: ThinkTrainConfig, step: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rows = []
    for position in range(config.batch_size):
        problem = training_problem(config.seed, step, position)
        rng = random.Random(f"think-trace:{config.seed}:{step}:{position}")
        rows.append(
            render_example(tokenizer, problem.question, trace(problem, rng, config.circle_share))
        )
    width = max(len(ids) for ids, _ in rows)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    for row, (ids, start) in enumerate(rows):  # right padding: training needs no alignment
        input_ids[row, : len(ids)] = torch.tensor(ids)
        mask[row, : len(ids)] = 1
        labels[row, start : len(ids)] = torch.tensor(ids[start:])
    return input_ids, mask, labels


def _completion_loss(
    model: Any, input_ids: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy over the completion tokens. The vocabulary projection (a fifth of the
    model's compute on SmolLM2) runs only on the positions that predict one, not the prompt."""
    hidden = model.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
    targets = labels[:, 1:]
    chosen = targets != -100
    logits = model.lm_head(hidden[:, :-1][chosen])
    return nn.functional.cross_entropy(logits.float(), targets[chosen])


def _learning_rate(config: ThinkTrainConfig, step: int) -> float:
    if step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    return config.learning_rate * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train_think(
    config: ThinkTrainConfig,
    base_folder: Path,
    out: Path,
    on_step: Callable[[int, float], None] | None = None,
) -> dict[str, Any]:
    """Train the delta into `out` (resuming from `out/resume.pt` when the config matches);
    returns the provenance written beside it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    model = AutoModelForCausalLM.from_pretrained(str(base_folder), dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(base_folder))
    model.train()
    wrapped = add_lora(model, config)
    parameters = [p for lora in wrapped.values() for p in (lora.lora_A, lora.lora_B)]
    optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate, weight_decay=0.0)
    out.mkdir(parents=True, exist_ok=True)
    resume = out / "resume.pt"
    start, losses, seconds, cpu = 0, [], 0.0, 0.0
    if resume.is_file():
        state = torch.load(resume, weights_only=False)
        if state["config"] != config.model_dump(mode="json"):
            raise ThinkTrainError(f"{resume} was written by another config; use a new --out")
        for (name, lora), saved in zip(wrapped.items(), state["factors"], strict=True):
            assert name == saved[0]
            lora.lora_A.data.copy_(saved[1])
            lora.lora_B.data.copy_(saved[2])
        optimizer.load_state_dict(state["optimizer"])
        start, losses = state["step"], state["losses"]
        seconds, cpu = state["seconds"], state["cpu_seconds"]
    wall0, cpu0 = time.monotonic(), time.process_time()
    for step in range(start, config.steps):
        input_ids, mask, labels = _batch(tokenizer, config, step)
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(config, step)
        loss = _completion_loss(model, input_ids, mask, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(round(loss.item(), 5))
        if on_step is not None:
            on_step(step, losses[-1])
        if (step + 1) % config.checkpoint_every == 0 and step + 1 < config.steps:
            _save_resume(
                resume,
                config,
                wrapped,
                optimizer,
                step + 1,
                losses,
                seconds + time.monotonic() - wall0,
                cpu + time.process_time() - cpu0,
            )
    seconds += time.monotonic() - wall0
    cpu += time.process_time() - cpu0
    scale = config.alpha / config.rank
    tensors = {}
    for name, lora in wrapped.items():
        tensors[f"{name}.lora_A"] = lora.lora_A.detach().contiguous()
        tensors[f"{name}.lora_B"] = lora.lora_B.detach().contiguous()
    with atomic_writer(out / DELTA_FILE, binary=True) as handle:
        handle.write(save(tensors, metadata={"scale": repr(scale)}))
    provenance = {
        "variant": "smollm2-think",
        "config": config.model_dump(mode="json"),
        "base_folder_files": {
            file.name: file_sha256(file) for file in sorted(base_folder.glob("*.safetensors"))
        },
        "delta_sha256": file_sha256(out / DELTA_FILE),
        "trainable_parameters": sum(p.numel() for p in parameters),
        "train_seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "torch": torch.__version__,
        "losses_first_last": [losses[:5], losses[-5:]],
        "final_loss": sum(losses[-10:]) / len(losses[-10:]),
    }
    write_json_atomic(out / "provenance.json", provenance)
    resume.unlink(missing_ok=True)
    return provenance


def _save_resume(
    path: Path,
    config: ThinkTrainConfig,
    wrapped: dict[str, LoRALinear],
    optimizer: torch.optim.Optimizer,
    step: int,
    losses: list[float],
    seconds: float,
    cpu: float,
) -> None:
    state = {
        "config": config.model_dump(mode="json"),
        "factors": [(n, lo.lora_A.detach(), lo.lora_B.detach()) for n, lo in wrapped.items()],
        "optimizer": optimizer.state_dict(),
        "step": step,
        "losses": losses,
        "seconds": seconds,
        "cpu_seconds": cpu,
    }
    with atomic_writer(path, binary=True) as handle:
        torch.save(state, handle)

"""Train a star-graph testbed: a real HF causal LM distilled from the exploring teacher.

Steps:
1. Build a Llama-architecture model (so it has `model.layers[i].mlp.down_proj` like real LLMs;
   head size 32 so vLLM's CPU attention accepts it) and the word-level tokenizer.
2. Every step draws a fresh batch of graphs and teacher walks from a seeded generator; in the
   default variant a small fraction of walks degenerate into a verbatim loop (a student
   distilled from a teacher that sometimes loops). Loss on walk tokens only. The graphs and
   clean walks come from one stream and the looping walks that replace some of them from
   another, so two configs that differ only in `loop_fraction` (or the margin, or precision)
   see the same graphs in the same order: a paired comparison.
3. AdamW with warm-up and cosine decay over a fixed number of steps (deterministic for a seed);
   optionally a penalty on the probability of already-visited nodes (`margin_weight`), reduced
   precision (`precision`), curriculum stages that take the loss off repeated excursions
   (`lab.curriculum`), teacher walks de-looped as `loopfix clean` would (`lab.deloop`), a
   decay on attention to recent positions (`lab.attention`), a visited-set marker on the
   walk's nodes (`lab.memory`) and training-only heads that predict further ahead
   (`lab.multistep`).
4. Save model (in fp32 whatever it trained in), tokenizer and `training.json` (config, seed,
   versions, time, tokens, FLOPs estimate) into one folder.
"""

from __future__ import annotations

import json
import math
import platform
import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from loopfix.atomic import atomic_folder, check_output_path
from loopfix.lab.attention import DECAY_KEY, use_attention_decay
from loopfix.lab.config import TrainConfig
from loopfix.lab.curriculum import loss_mask, stage_at
from loopfix.lab.deloop import deloop_walk
from loopfix.lab.hints import HINT_PROBE_SHARE, POSITION_KINDS, insert_hints, position_kinds
from loopfix.lab.memory import add_visited_memory, store_marker
from loopfix.lab.multistep import MultiStepHeads
from loopfix.lab.stargraph import (
    BOS_ID,
    EOS_ID,
    NODE_NAMES,
    PAD_ID,
    VOCABULARY,
    looping_teacher_walk,
    make_graph,
    prompt_length,
    teacher_walk,
)
from loopfix.lab.tokenizer import build_tokenizer

# Any reduced precision trains with transformers' eager attention, whose softmax runs in fp32
# (there is no fp16-softmax path in its Llama), so the arms differ in everything but that.
_AUTOCAST = {"bf16-amp": torch.bfloat16, "fp16-amp": torch.float16}
# A step computes its batch in this many groups of rows of similar length (`by_length`).
_LENGTH_GROUPS = 2


def build_model(config: TrainConfig) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    decay = (
        {"steps": config.attention_decay_steps, "factor": config.attention_decay_factor}
        if config.attention_decay_steps
        else None
    )
    model_config = LlamaConfig(
        vocab_size=len(VOCABULARY),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.layers,
        initializer_range=config.init_std,
        num_attention_heads=config.heads,
        num_key_value_heads=config.heads,
        head_dim=config.head_dim,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        pad_token_id=PAD_ID,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
    )
    if decay:  # an extra config field, saved with the checkpoint like the others
        setattr(model_config, DECAY_KEY, decay)
    if config.precision != "fp32":
        model_config._attn_implementation = "eager"
    model = LlamaForCausalLM(model_config)
    use_attention_decay(model)
    return model.half() if config.precision == "fp16" else model


@dataclass(frozen=True)
class Extras:
    """What trains beside the model's own weights: the memory's marker (saved into the model's
    config) and the multi-step heads (dropped), and the parameters every token passes through
    in them that the model's count leaves out (for the FLOPs estimate)."""

    marker: torch.nn.Parameter | None
    heads: MultiStepHeads | None

    def parameters(self) -> list[torch.nn.Parameter]:
        return ([self.marker] if self.marker is not None else []) + (
            list(self.heads.parameters()) if self.heads is not None else []
        )

    def flops_parameters(self, model: torch.nn.Module) -> int:
        marker = 0 if self.marker is None else self.marker.numel()
        heads = 0 if self.heads is None else self.heads.flops_parameters(model.lm_head)  # type: ignore[arg-type]
        return marker + heads


def training_extras(model: torch.nn.Module, config: TrainConfig) -> Extras:
    """The memory's marker (put on `model` here) and the multi-step heads, as configured."""
    marker = (
        add_visited_memory(model, prompt_length(config.arms, config.depth))
        if config.visited_memory
        else None
    )
    heads = (
        MultiStepHeads(config.hidden_size, config.multi_step_heads)
        if config.multi_step_heads
        else None
    )
    return Extras(marker, heads)


@dataclass(frozen=True)
class Batch:
    ids: torch.Tensor
    labels: torch.Tensor  # -100 outside the walk and wherever the walk carries no loss
    delooped: int  # walks the de-looping dropped or cut
    kinds: torch.Tensor  # per token: its walk position kind (lab.hints), -1 outside the walk


def make_batch(
    rng: random.Random,
    config: TrainConfig,
    looping: int,
    loop_rng: random.Random | None = None,
    stage: int = 3,
    hint_kind: int | None = None,
) -> Batch:
    """One step's walks; the first `looping` of them loop. Every row draws its graph and clean
    walk from `rng`, a looping row then its looping walk from `loop_rng` (`rng` when None), so
    `rng` advances alike whatever `looping` is. A walk the de-looping drops stays in the batch
    without loss, so the stream and the batch size stay those of the other arms. With
    `hint_kind`, every walk gets its hints before the tokens of that kind (`lab.hints`)."""
    sequences, masks, kinds = [], [], []
    delooped = 0
    for index in range(config.batch_size):
        graph = make_graph(rng, config.arms, config.depth)
        walk = teacher_walk(rng, graph, config.p_correct, config.p_backtrack)
        if index < looping:
            walk, _ = looping_teacher_walk(
                loop_rng or rng, graph, config.p_correct, config.p_backtrack, config.loop_cap
            )
        kept = deloop_walk(walk, config.deloop)
        delooped += kept != walk
        walk = walk if kept is None else kept
        if hint_kind is not None:
            walk = insert_hints(walk, graph, hint_kind)
        prompt = graph.prompt_ids()
        kinds.append([-1] * len(prompt) + position_kinds(walk))
        sequences.append(prompt + walk)
        walk_mask = [False] * len(walk) if kept is None else loss_mask(walk, stage)
        masks.append([False] * len(prompt) + walk_mask)
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), PAD_ID, dtype=torch.long)
    labels = torch.full_like(ids, -100)
    kind_ids = torch.full_like(ids, -1)
    for row, (sequence, mask) in enumerate(zip(sequences, masks, strict=True)):
        ids[row, : len(sequence)] = torch.tensor(sequence)
        kind_ids[row, : len(sequence)] = torch.tensor(kinds[row])
        carries = torch.tensor(mask)
        labels[row, : len(sequence)][carries] = ids[row, : len(sequence)][carries]
    return Batch(ids, labels, delooped, kind_ids)


def loss_by_kind(logits: torch.Tensor, labels: torch.Tensor, kinds: torch.Tensor) -> list[float]:
    """The mean next-token loss at the walk tokens of each position kind (`lab.hints`; nan for
    a kind the batch lacks), for choosing where the hints go."""
    losses = torch.nn.functional.cross_entropy(
        logits[:, :-1].float().flatten(0, 1), labels[:, 1:].flatten(), reduction="none"
    ).view_as(labels[:, 1:])
    carried = labels[:, 1:] != -100
    return [
        float(losses[(kinds[:, 1:] == kind) & carried].mean())
        for kind in range(len(POSITION_KINDS))
    ]


def next_token_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The cross-entropy of every carried next token, summed (divided by the batch's targets in
    `train`, like every loss term, so a batch computed in parts adds up to the whole)."""
    return torch.nn.functional.cross_entropy(
        logits[:, :-1].float().flatten(0, 1), labels[:, 1:].flatten(), reduction="sum"
    )


def visited_mass(logits: torch.Tensor, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The margin penalty: the probability that each walk prediction gives to nodes the walk
    has already visited, the teacher's own next token excepted (returning to the root after
    `back` is not penalised, nor is a re-entry the teacher made), summed over the predictions:
    the trainer divides every loss term by the batch's next-token targets, so that a batch
    computed in parts (`by_length`) adds up to the whole."""
    nodes = (labels != -100) & (ids < len(NODE_NAMES))
    seen = torch.nn.functional.one_hot(ids, len(VOCABULARY)) * nodes.unsqueeze(-1)
    visited = seen.cumsum(1)[:, :-1] > 0  # at position t: nodes among the walk's first t+1
    targets = labels[:, 1:]
    predicted = targets != -100
    visited = visited.scatter(-1, targets.clamp(min=0).unsqueeze(-1), False)
    probabilities = torch.softmax(logits[:, :-1].float(), -1)
    return (probabilities * visited).sum(-1)[predicted].sum()


def by_length(
    ids: torch.Tensor, labels: torch.Tensor, parts: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The batch's rows in up to `parts` groups by length, each cut to its longest row: the
    same tokens and losses with less padding to compute than the batch padded to its longest
    walk (`bench/bench_experiment_steps.py` times it)."""
    lengths = (ids != PAD_ID).sum(1)
    groups = []
    for rows in torch.argsort(lengths, stable=True).tensor_split(parts):
        if len(rows):
            width = int(lengths[rows].max())
            groups.append((ids[rows, :width], labels[rows, :width]))
    return groups


def learning_rate(config: TrainConfig, step: int) -> float:
    warmup = min(1.0, (step + 1) / max(1, config.warmup_steps))
    decay_steps = config.decay_share * config.steps
    decayed = max(0.0, step - (config.steps - decay_steps)) / decay_steps
    cosine = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * decayed))
    return config.learning_rate * warmup * cosine


def train(
    config: TrainConfig,
    out: Path,
    on_step: Callable[[int, float], None] | None = None,
) -> dict[str, object]:
    """Train and save a testbed into `out`; returns the training metadata."""
    check_output_path(out, folder=True)  # before minutes of training, not after
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    data_rng = random.Random(config.seed + 1000)
    loop_rng = np.random.default_rng(config.seed + 2000)
    loop_walk_rng = random.Random(config.seed + 3000)
    model = build_model(config)
    extras = training_extras(model, config)
    optimizer = torch.optim.AdamW(
        [*model.parameters(), *extras.parameters()],
        lr=config.learning_rate,
        weight_decay=0.01,
        betas=(0.9, 0.98),
        # 1e-8 is 0 in fp16, and the first step divides 0 by it
        eps=1e-4 if config.precision == "fp16" else 1e-8,
    )
    scaler = torch.amp.GradScaler("cpu", enabled=config.precision == "fp16-amp")
    final_hidden: list[torch.Tensor] = []
    decoder: Any = model.model
    output_layer: Any = model.lm_head  # a Llama's decoder; the heads read its final normed state
    if extras.heads is not None:
        decoder.norm.register_forward_hook(lambda _m, _i, out: final_hidden.append(out))
    started = time.perf_counter()
    losses: list[float] = []
    looping_walks = tokens = delooped = 0
    hint_kind: int | None = None
    kind_losses: list[float] = []
    probe_step = round(HINT_PROBE_SHARE * config.steps) - 1 if config.hints else -1
    for step in range(config.steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step)
        looping = 0
        if config.loop_fraction > 0 and loop_rng.random() < config.loop_batch_fraction:
            share = min(1.0, config.loop_fraction / config.loop_batch_fraction)
            looping = int(loop_rng.binomial(config.batch_size, share))
        looping_walks += looping
        stage = stage_at(config, step)
        batch = make_batch(data_rng, config, looping, loop_walk_rng, stage, hint_kind)
        ids, labels = batch.ids, batch.labels
        delooped += batch.delooped
        tokens += int((ids != PAD_ID).sum())
        if step == probe_step:  # hints from the next step on, where the loss is highest
            with torch.no_grad(), autocast(config):
                kind_losses = loss_by_kind(model(input_ids=ids).logits, labels, batch.kinds)
            final_hidden.clear()
            hint_kind = int(np.nanargmax(kind_losses))
        targets = int((labels[:, 1:] != -100).sum())
        loss = torch.zeros(())
        for part_ids, part_labels in by_length(ids, labels, _LENGTH_GROUPS):
            with autocast(config):
                logits = model(input_ids=part_ids).logits
            terms = next_token_loss(logits, part_labels)
            if config.margin_weight > 0:
                terms = terms + config.margin_weight * visited_mass(logits, part_ids, part_labels)
            if extras.heads is not None:
                terms = terms + extras.heads.loss(final_hidden.pop(), output_layer, part_labels)
            loss = loss + terms / targets
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_([*model.parameters(), *extras.parameters()], 1.0)
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, float(np.mean(losses[-50:])))
    seconds = time.perf_counter() - started
    parameters = sum(p.numel() for p in model.parameters())
    if extras.marker is not None:
        store_marker(model, extras.marker, prompt_length(config.arms, config.depth))
    metadata: dict[str, object] = {
        "config": config.model_dump(),
        "parameters": parameters,
        "first_loss": losses[0],
        "final_loss": float(np.mean(losses[-max(1, config.steps // 10) :])),
        "looping_walk_share": looping_walks / (config.steps * config.batch_size),
        "delooped_walk_share": delooped / (config.steps * config.batch_size),
        "train_seconds": round(seconds, 1),
        "train_tokens": tokens,
        # the usual 6 x parameters x tokens (forward and backward), attention left out; the
        # memory's marker and the multi-step heads (with their pass through the output layer)
        # count as parameters here
        "train_flops": 6 * (parameters + extras.flops_parameters(model)) * tokens,
        **(
            {"hints": {"kind": POSITION_KINDS[hint_kind], "losses": kind_losses}}
            if hint_kind is not None
            else {}
        ),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    save_testbed(model.float(), out, metadata)
    return metadata


def autocast(config: TrainConfig) -> AbstractContextManager[object]:
    if config.precision in _AUTOCAST:
        return torch.autocast("cpu", dtype=_AUTOCAST[config.precision])
    return nullcontext()


def save_testbed(model: torch.nn.Module, out: Path, metadata: dict[str, object]) -> None:
    with atomic_folder(out) as work:
        model.save_pretrained(work)  # type: ignore[attr-defined,operator]
        build_tokenizer().save_pretrained(work)
        (work / "training.json").write_text(json.dumps(metadata, indent=1) + "\n")

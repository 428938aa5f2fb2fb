import numpy as np
import pytest
import torch

from loopfix.engine import DecodeEngine
from loopfix.engine.sampling import draw, uniforms
from loopfix.guards import GuardChain, parse_guards
from loopfix.guards.base import Guard, GuardParams
from loopfix.models import tiny_model, tiny_tokenizer
from loopfix.records import DecodeSettings
from tests.decoding import plain_greedy

PROMPTS = [[1, 5, 6, 7], [1, 9, 3], [1, 20, 21, 22, 23], [1, 4], [1, 30, 31, 8, 9, 10], [1, 11]]
WATCH = {"rescue.min_span": 8, "rescue.max_period": 16, "rescue.budget": 2}


def run(model, settings, batch_size, spec="none", args=None, prompts=PROMPTS):
    engine = DecodeEngine(model, settings, 2, 2, batch_size, lambda: parse_guards(spec, args or {}))
    results = dict(engine.run(prompts, [100 + i for i in range(len(prompts))]))
    return [results[i] for i in range(len(prompts))]


def test_uniforms_depend_on_seed_and_position_only_and_are_uniform() -> None:
    seeds = np.arange(20_000, dtype=np.uint64)
    positions = np.full(20_000, 7, dtype=np.uint64)
    u = uniforms(seeds, positions)
    assert ((u >= 0) & (u < 1)).all()
    assert np.array_equal(u[5:10], uniforms(seeds[5:10], positions[5:10]))
    assert not np.array_equal(u, uniforms(seeds, positions + np.uint64(1)))
    counts, _ = np.histogram(u, bins=10, range=(0, 1))
    assert counts.min() > 1_850 and counts.max() < 2_150  # 2,000 expected per bin


def test_inverse_cdf_draws_follow_the_distribution_and_skip_impossible_tokens() -> None:
    probs = torch.tensor([0.5, 0.0, 0.2, 0.3, 0.0])
    u = uniforms(np.arange(30_000, dtype=np.uint64), np.zeros(30_000, dtype=np.uint64))
    tokens = draw(probs.expand(30_000, -1), u)
    frequencies = torch.bincount(tokens, minlength=5).double() / 30_000
    assert frequencies[1] == 0 and frequencies[4] == 0
    assert torch.allclose(frequencies, probs.double(), atol=0.01)
    edges = np.array([0.0, 0.5, 0.7, 0.999999999])  # at and just below the CDF's steps
    assert draw(probs.expand(4, -1), edges).tolist() == [0, 2, 3, 3]


@pytest.mark.parametrize("family", ["llama", "gpt2", "gemma2", "gemma3"])
def test_continuous_and_fixed_batches_equal_plain_greedy_decoding(family: str) -> None:
    model = tiny_model(family, seed=1)
    settings = DecodeSettings(max_new_tokens=20)
    batched = run(model, settings, batch_size=4)  # 6 prompts through 4 rows: refills
    assert [r.tokens for r in batched] == [plain_greedy(model, p, 20) for p in PROMPTS]
    for result in batched:
        stopped = result.tokens[-1:] == [2]
        assert result.finish_reason == ("stop" if stopped else "length")


@pytest.mark.parametrize("family", ["llama", "gemma2", "gemma3"])
def test_sampling_and_rescue_do_not_depend_on_batch_mates(family: str) -> None:
    model = tiny_model(family, seed=0)
    sampled = DecodeSettings(temperature=0.8, max_new_tokens=24)
    assert [r.tokens for r in run(model, sampled, 4)] == [r.tokens for r in run(model, sampled, 1)]
    greedy = DecodeSettings(max_new_tokens=40)
    # Batch 8 admits only when 2 rows are free: a rolled-back row may wait while others step.
    together = run(model, greedy, 8, "rescue", WATCH, PROMPTS * 3)
    alone = run(model, greedy, 1, "rescue", WATCH, PROMPTS * 3)
    assert [r.tokens for r in together] == [r.tokens for r in alone]
    assert [r.guards for r in together] == [r.guards for r in alone]
    together = run(model, greedy, 4, "rescue", WATCH)
    alone = run(model, greedy, 1, "rescue", WATCH)
    assert [r.tokens for r in together] == [r.tokens for r in alone]
    assert [r.guards for r in together] == [r.guards for r in alone]
    rescued = [r for r in together if r.guards and r.guards.get("rescues")]
    assert rescued, "the tiny model loops at greedy: some rescue must fire"
    # A rollback re-prefills the kept prefix: the row pays for those tokens again.
    for result in rescued:
        assert result.forward_tokens > len(result.tokens)


def test_guards_that_leave_logits_alone_draw_the_same_tokens_as_none() -> None:
    model = tiny_model("llama", seed=0)
    settings = DecodeSettings(temperature=1.0, max_new_tokens=24)
    none = run(model, settings, 4)
    # A cut that never fires (a period longer than any output) changes nothing at T=1.
    idle = run(model, settings, 4, "cut", {"cut.min_span": 64, "cut.max_period": 32})
    assert [r.tokens for r in idle] == [r.tokens for r in none]


class RowSpy(Guard):
    """Checks, each step, that every row it holds inside the batch is a running sequence."""

    name = "row-spy"
    Params = GuardParams

    def start(self, row):
        return None

    def adjust(self, row, logits) -> None:
        pass

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        inside = [row for row in self.rows if row < logits.shape[0]]
        assert all(row >= 0 for row in inside), f"a waiting row inside the batch: {inside}"
        assert len(inside) == logits.shape[0], "every running row has guard state"
        return logits


def test_rolled_back_rows_wait_outside_the_batch() -> None:
    model = tiny_model("llama", seed=0)

    def chain() -> GuardChain:  # the spy rides along with a real rescue guard
        return GuardChain([*parse_guards("rescue", WATCH).guards, RowSpy()])

    engine = DecodeEngine(model, DecodeSettings(max_new_tokens=40), 2, 2, 8, chain)
    results = dict(engine.run(PROMPTS * 3, range(18)))
    assert any(r.guards and r.guards.get("rescues") for r in results.values())


def _snapshot(model):
    """Every module's class and every parameter (the tensor itself) of a model."""
    classes = [(name, type(module)) for name, module in model.named_modules()]
    return classes, dict(model.named_parameters())


def _assert_as_it_came(model, snapshot, ids, logits) -> None:
    classes, parameters = snapshot
    assert [(name, type(module)) for name, module in model.named_modules()] == classes
    now = dict(model.named_parameters())
    assert now.keys() == parameters.keys()
    assert all(now[name] is parameter for name, parameter in parameters.items())
    with torch.inference_mode():
        assert torch.equal(model(ids).logits, logits)


@pytest.mark.parametrize("model_name", ["tiny-llama", "loopfix:stargraph"])
def test_the_engine_leaves_the_model_as_it_came_also_when_it_fails(model_name) -> None:
    from loopfix.models import load_model

    if model_name == "tiny-llama":
        model = tiny_model("llama")
        prompts = PROMPTS
    else:
        model, _ = load_model(model_name, device="cpu")
        prompts = [[1, 5, 6, 7], [1, 9, 3]]
    ids = torch.tensor([prompts[0]])
    with torch.inference_mode():
        before = model(ids).logits
    snapshot = _snapshot(model)
    settings = DecodeSettings(temperature=0.0, max_new_tokens=8)
    run(model, settings, batch_size=4, prompts=prompts)  # the fused forward, where it serves
    _assert_as_it_came(model, snapshot, ids, before)
    # A hook sends every forward through the model's own modules (switched to oneDNN for
    # each call only); this one fails mid-run, inside such a call.
    calls, seen = 0, set()

    def failing(module, args, output):
        nonlocal calls
        calls += 1
        seen.add(type(module).__name__)
        if calls == 3:
            raise RuntimeError("a hook fails")

    hook = model.get_output_embeddings().register_forward_hook(failing)
    with pytest.raises(RuntimeError, match="a hook fails"):
        run(model, settings, batch_size=4, prompts=prompts)
    hook.remove()
    assert calls == 3 and seen == {"OneDNNLinear"}  # the failing calls ran switched
    _assert_as_it_came(model, snapshot, ids, before)


def first_completion(tokens: list[int], stop: str, decode) -> int:
    """How many tokens the output has when `stop` first shows in its decoded text."""
    return next(k for k in range(1, len(tokens) + 1) if stop in decode(tokens[:k]))


def test_a_stop_text_ends_the_greedy_generation_where_it_first_shows() -> None:
    model, tokenizer = tiny_model("gemma3", seed=1), tiny_tokenizer()

    def decode(ids):
        return tokenizer.decode(ids, skip_special_tokens=True)

    settings = DecodeSettings(max_new_tokens=40)
    free = run(model, settings, batch_size=4)
    text = decode(free[0].tokens)
    # Texts the free greedy output of prompt 0 is known to contain, each one ending inside it
    # (the tiny tokenizer decodes most ids to nothing: the check must look past them).
    assert text == "0 0 0 0 l l t 2 h"
    stops = ["l l t", "2 h"]
    for stop in stops:
        engine = DecodeEngine(model, settings, 2, 2, 4, decode=decode)
        texts = [(stop,)] + [()] * (len(PROMPTS) - 1)
        results = dict(engine.run(PROMPTS, [100 + i for i in range(len(PROMPTS))], texts))
        end = first_completion(free[0].tokens, stop, decode)
        assert end < 40
        assert results[0].tokens == free[0].tokens[:end]
        assert (results[0].finish_reason, results[0].stop) == ("stop", stop)
        # The other rows, with no stop text, are untouched by their batch mate's.
        assert [results[i].tokens for i in range(1, len(PROMPTS))] == [r.tokens for r in free[1:]]
        assert all(results[i].stop is None for i in range(1, len(PROMPTS)))


def test_stop_texts_need_a_decoder() -> None:
    engine = DecodeEngine(tiny_model("llama"), DecodeSettings(max_new_tokens=4), 2, 2)
    with pytest.raises(ValueError, match="decode"):
        list(engine.run(PROMPTS[:1], [0], [("a",)]))

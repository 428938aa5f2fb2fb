import torch

from loopfix.models import tiny_model
from loopfix.patch import EditSite
from loopfix.repair.batches import ProbeBatch, make_batches
from loopfix.repair.linear_proxy import column_gains


def _states(model: torch.nn.Module, batch: ProbeBatch) -> torch.Tensor:
    with torch.no_grad():
        logits = model(input_ids=batch.ids).logits
    return torch.log_softmax(logits[batch.rows, batch.positions], -1)


def test_row_groups_read_the_same_states_as_the_whole_batch() -> None:
    model = tiny_model("qwen2", seed=3)
    generator = torch.Generator().manual_seed(2)
    lengths = [30, 12, 25, 8, 30, 17]
    items = [
        (torch.randint(3, 40, (n,), generator=generator).tolist(), list(range(1, n - 1, 3)))
        for n in lengths
    ]
    (whole,) = make_batches(items, batch_size=6, pad_id=0)
    parts = whole.chunks(64)
    # 28 is the furthest state read: two rows of 29 ids per group, each group cut after its
    # own last state (28, 22, 28).
    assert [len(p.ids) for p in parts] == [2, 2, 2]
    assert [p.ids.shape[1] for p in parts] == [29, 23, 29]
    torch.testing.assert_close(torch.cat([p.targets for p in parts]), whole.targets)
    torch.testing.assert_close(
        torch.cat([_states(model, p) for p in parts]), _states(model, whole), atol=1e-5, rtol=1e-5
    )
    # A row longer than the budget still goes, alone.
    assert [len(p.ids) for p in whole.chunks(10)] == [1] * 6


def test_the_gradient_gains_do_not_depend_on_the_row_groups() -> None:
    model = tiny_model("qwen2", seed=3)
    generator = torch.Generator().manual_seed(4)
    items = [
        (torch.randint(3, 40, (20,), generator=generator).tolist(), [4, 9, 18]) for _ in range(5)
    ]
    directions = torch.nn.functional.normalize(torch.randn(2, 64, generator=generator), dim=-1)
    sites = [EditSite(layer, kind) for layer in range(2) for kind in ("down_proj", "attn_out")]
    one_pass = column_gains(model, make_batches(items, 5, 0), directions, sites)
    row_by_row = column_gains(model, make_batches(items, 1, 0), directions, sites)
    for site in sites:
        torch.testing.assert_close(one_pass[site], row_by_row[site], atol=1e-9, rtol=1e-6)

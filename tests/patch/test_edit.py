import pytest
import torch

from loopfix.models import architecture_for, write_matrix
from loopfix.patch import EditSite, apply_patch, build_patch
from loopfix.patch.edit import edited_columns, top_columns, unit, write_strength
from loopfix.patch.sites import site_module

from .helpers import fresh, requests_for


def test_alpha_one_removes_and_alpha_two_reverses_the_write_along_u() -> None:
    generator = torch.Generator().manual_seed(0)
    write = torch.randn(16, 40, generator=generator, dtype=torch.float64)
    u = torch.randn(16, generator=generator, dtype=torch.float64)
    columns = torch.tensor([1, 5, 7])
    before = unit(u) @ write[:, columns]
    removed = edited_columns(write, u, columns, 1.0)
    reversed_ = edited_columns(write, u, columns, 2.0)
    torch.testing.assert_close(
        unit(u) @ removed, torch.zeros(3, dtype=torch.float64), atol=1e-12, rtol=0
    )
    torch.testing.assert_close(unit(u) @ reversed_, -before)
    # The part orthogonal to u is untouched.
    orthogonal = write[:, columns] - torch.outer(unit(u), before)
    torch.testing.assert_close(removed, orthogonal)


def test_top_columns_are_the_strongest_writers_along_u() -> None:
    write = torch.zeros(4, 10)
    write[0] = torch.tensor([0.1, -5.0, 0.2, 3.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0])
    u = torch.tensor([2.0, 0.0, 0.0, 0.0])
    assert top_columns(write, u, 3).tolist() == [1, 3, 6]
    assert write_strength(write, u)[1].item() == pytest.approx(-5.0)
    with pytest.raises(ValueError, match="k must be"):
        top_columns(write, u, 11)


def test_zero_direction_is_refused() -> None:
    with pytest.raises(ValueError, match="non-zero"):
        unit(torch.zeros(4))


def test_edit_acts_on_what_each_selected_input_unit_writes(family: str) -> None:
    """Behavioural orientation check: feed one-hot inputs through the real module and read the
    residual-space output along u, for nn.Linear and GPT-2's Conv1D alike."""
    model = fresh(family)
    for request in requests_for(model):
        module = site_module(model, request.site)
        n_inputs = write_matrix(module, architecture_for(model).orientation).shape[1]
        probes = torch.eye(n_inputs)
        with torch.no_grad():
            zero = module(torch.zeros(1, n_inputs))
            before = module(probes) - zero
        patch = build_patch(model, [request])
        with apply_patch(model, patch), torch.no_grad():
            after = module(probes) - module(torch.zeros(1, n_inputs))
        u = unit(request.direction).float()
        selected = request.columns
        other = torch.ones(n_inputs, dtype=torch.bool)
        other[selected] = False
        torch.testing.assert_close(
            after[selected] @ u, (1 - request.alpha) * (before[selected] @ u), atol=1e-5, rtol=1e-4
        )
        assert torch.equal(after[other], before[other])


def test_build_leaves_the_model_untouched(family: str) -> None:
    model = fresh(family)
    original = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    patch = build_patch(model, requests_for(model))
    assert all(torch.equal(original[name], tensor) for name, tensor in model.state_dict().items())
    assert patch.touched_parameters == 2 * 5 * 64
    assert {edit.site for edit in patch.edits} == {"down_proj", "attn_out"}


def test_two_edits_of_one_tensor_are_refused() -> None:
    model = fresh("llama")
    request = requests_for(model)[0]
    with pytest.raises(ValueError, match="two edits touch"):
        build_patch(model, [request, request])


def test_site_kind_is_checked() -> None:
    with pytest.raises(ValueError, match="site kind"):
        site_module(fresh("llama"), EditSite(0, "q_proj"))  # type: ignore[arg-type]

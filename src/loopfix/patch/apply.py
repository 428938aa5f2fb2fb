"""Apply and revert a Patch on a loaded model, in memory, with hash checks and undo.

Steps of `apply_patch`:
1. Check every touched tensor first (exists, shape, dtype, SHA-256 equals the manifest's
   "before"); refuse with a message naming the tensor before writing anything.
2. Write the stored "after" columns, one tensor at a time, remembering what was written.
3. Check every "after" hash; on any failure in 2-3, put the original columns back and re-raise
   (a wrong "after" hash at this point is the patch file's fault, not the model's).
`revert_patch` is the same with "before" and "after" swapped. A `PatchHandle` reverts what it
applied; `patched(model, patch)` is the context manager that always reverts on exit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Literal

import torch

from loopfix.errors import LoopfixError
from loopfix.models.modules import oriented
from loopfix.patch.format import ColumnEdit, Patch, PatchFormatError
from loopfix.patch.hashing import tensor_sha256
from loopfix.patch.sites import write_view

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "PatchHandle",
    "PatchMismatchError",
    "apply_patch",
    "edited_tensor",
    "patched",
    "revert_patch",
]

_State = Literal["before", "after"]


class PatchMismatchError(LoopfixError, ValueError):
    """The model's tensors are not the ones the patch was made for (or made from)."""


def _check(model: nn.Module, edit: ColumnEdit, expected: _State) -> None:
    try:
        parameter = model.get_parameter(edit.name)
    except AttributeError:
        raise PatchMismatchError(f"the model has no tensor {edit.name!r}") from None
    _check_tensor(parameter, edit, expected)


def _check_tensor(tensor: torch.Tensor, edit: ColumnEdit, expected: _State) -> None:
    other: _State = "after" if expected == "before" else "before"
    if tuple(tensor.shape) != edit.shape or str(tensor.dtype) != edit.dtype:
        raise PatchMismatchError(
            f"{edit.name} is {tuple(tensor.shape)} {tensor.dtype}; the patch expects "
            f"{edit.shape} {edit.dtype} (load the model in the patch's dtype)"
        )
    digest = tensor_sha256(tensor)
    if digest == getattr(edit, f"sha256_{expected}"):
        return
    hint = (
        f" It matches the patch's {other!r} state: the patch is already "
        + ("applied." if other == "after" else "reverted.")
        if digest == getattr(edit, f"sha256_{other}")
        else " This is a different model or a different revision of it."
    )
    raise PatchMismatchError(
        f"{edit.name}: SHA-256 {digest[:16]}... does not match the patch's {expected!r} hash "
        f"{getattr(edit, f'sha256_{expected}')[:16]}...; refusing to edit.{hint}"
    )


def _write(model: nn.Module, edit: ColumnEdit, state: _State) -> None:
    _write_into(write_view(model, edit.name, edit.orientation), edit, state)


def _write_into(view: torch.Tensor, edit: ColumnEdit, state: _State) -> None:
    view[:, edit.columns.to(view.device)] = getattr(edit, state).to(view.device)


def _inconsistent(target: _State, error: PatchMismatchError) -> PatchFormatError:
    # The tensor matched the source hash and the stored columns passed their own checksums,
    # so it is the manifest's target hash that is wrong.
    return PatchFormatError(
        f"the patch file is inconsistent: writing its {target!r} columns gives another tensor "
        f"than its {target!r} hash ({error}); re-create the patch"
    )


def _move(model: nn.Module, patch: Patch, source: _State, target: _State) -> None:
    """Move every touched tensor from `source` to `target` state, or leave all in `source`."""
    for edit in patch.edits:
        _check(model, edit, source)
    written: list[ColumnEdit] = []
    try:
        for edit in patch.edits:
            written.append(edit)
            _write(model, edit, target)
        for edit in patch.edits:
            try:
                _check(model, edit, target)
            except PatchMismatchError as error:
                raise _inconsistent(target, error) from error
    except BaseException:
        for edit in reversed(written):
            _write(model, edit, source)
        raise


def revert_patch(model: nn.Module, patch: Patch) -> None:
    """Restore the original columns of a patched model (refused unless it is patched)."""
    _move(model, patch, "after", "before")


class PatchHandle:
    """What `apply_patch` returns: `revert()` undoes it once; usable as a context manager."""

    def __init__(self, model: nn.Module, patch: Patch) -> None:
        self.model, self.patch, self.active = model, patch, True

    def revert(self) -> None:
        if self.active:
            revert_patch(self.model, self.patch)
            self.active = False

    def __enter__(self) -> PatchHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.revert()


@torch.no_grad()
def apply_patch(model: nn.Module, patch: Patch) -> PatchHandle:
    """Apply in place after checking the "before" hashes; all tensors change or none does."""
    _move(model, patch, "before", "after")
    return PatchHandle(model, patch)


def edited_tensor(tensor: torch.Tensor, edit: ColumnEdit) -> torch.Tensor:
    """A copy of one touched tensor (named `edit.name`, in the model's layout and dtype) with
    the edit applied; refused unless its hash is the patch's "before" and the copy's "after"."""
    _check_tensor(tensor, edit, "before")
    edited = tensor.detach().clone()
    _write_into(oriented(edited, edit.orientation), edit, "after")
    try:
        _check_tensor(edited, edit, "after")
    except PatchMismatchError as error:
        raise _inconsistent("after", error) from error
    return edited


@contextmanager
def patched(model: nn.Module, patch: Patch) -> Iterator[nn.Module]:
    """`with patched(model, patch):` runs the body on the patched model, then reverts."""
    handle = apply_patch(model, patch)
    try:
        yield model
    finally:
        handle.revert()

"""`decode_kernels`: the fused Llama forward's compiled CPU kernels (`decode_kernels.c`), built
on first use with the machine's C compiler and loaded through ctypes.

Why compiled code: after the linear layers moved to packed oneDNN weights, a SmolLM2 decode
step on 2 cores spent a fifth of its time in torch's CPU flash-attention kernel, which is built
for blocks of queries rather than one query per head, and about as much again in the per-call
cost of some 30 small torch operators per layer (RMSNorm alone is seven) (`bench/
bench_real_model.py --profile bfloat16`). `attend` does a layer's rotary embedding, cache append
and attention for every row and key/value head in one call, `prefill_attend` the same for
prompts packed without padding, `rms_norm` the residual add and the normalization, `silu_mul`
the MLP's activation. With them the engine makes 1.3-1.5x the tokens per second it makes on
torch's operators (`bench/bench_real_model.py`, docs/real-model.md).

The library is compiled for one shape (head size, query heads per key/value head) and dtype
(bfloat16 or float32), `-O3 -march=native -fopenmp`, into `<cache>/kernels/` (`LOOPFIX_CACHE_DIR`
or ~/.cache/loopfix), keyed by the source, the flags, the compiler's version and the CPU's
feature flags, so a later process loads it in milliseconds. OpenMP threads come from the
runtime torch already loaded (the same `libgomp.so.1`) and follow `torch.get_num_threads()`.
Without a working C compiler (`CC`, else `cc`) there are no kernels, and the decode steps run
on torch's operators instead (`llama_fused.TorchOps`), and a note says so.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

import torch

from loopfix.models.gguf import cache_dir

__all__ = ["DecodeKernels", "PackedRows", "decode_kernels"]

SOURCE = Path(__file__).with_name("decode_kernels.c")

_DTYPES = {torch.bfloat16: 1, torch.float32: 0}  # ELEM_BF16
_OPTIMIZE = ["-O3", "-march=native", "-fPIC", "-shared"]
_THREADED = ["-fopenmp"]  # tried first; a compiler without OpenMP builds single-threaded kernels

_log = logging.getLogger(__name__)

_P, _INT, _LONG, _FLOAT = ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_float
_CACHE = [_P, _P, _LONG, _LONG]  # key and value buffers, their row and head strides
_SIGNATURES = {
    "rms_norm": [_P, _P, _P, _P, _INT, _INT, _FLOAT, _INT],
    "silu_mul": [_P, _P, _INT, _INT, _INT],
    "attend": [_P, _P, _P, *_CACHE, _INT, _P, _LONG, _FLOAT, _P, _INT, _INT, _INT],
    "prefill_attend": [_P, _P, _P, *_CACHE, _INT, _P, _P, _P, _FLOAT, _P, _INT, _INT, _INT],
}


class DecodeKernels:
    """The kernels of one build (head size, query heads per key/value head, dtype). Each call
    checks the dtypes, shapes and layouts it relies on (the C code reads raw memory) and
    raises ValueError on a mismatch; see `decode_kernels.c` for what each computes."""

    def __init__(self, library: ctypes.CDLL, head_dim: int, group: int, dtype: torch.dtype):
        for name, arguments in _SIGNATURES.items():
            function = getattr(library, name)
            function.argtypes, function.restype = arguments, None
        self._library, self.head_dim, self.group, self.dtype = library, head_dim, group, dtype

    def _rows(self, tensor: torch.Tensor, width: int) -> int:
        """The row count of a contiguous (rows, width) tensor of this build's dtype."""
        _require(
            tensor.dtype == self.dtype and tensor.dim() == 2 and tensor.shape[1] == width,
            f"a ({width}-wide, {self.dtype}) tensor",
        )
        _require(tensor.is_contiguous(), "a contiguous tensor")
        return int(tensor.shape[0])

    def _cache(self, buffers: tuple[torch.Tensor, torch.Tensor], rows: int, positions: int):
        """The key and value buffers' pointers and shared strides, checked to be (rows, kv
        heads, at least `positions`, head size) with positions head size apart."""
        keys, values = buffers
        for buffer in buffers:
            _require(
                buffer.dtype == self.dtype and buffer.dim() == 4 and buffer.shape[0] == rows,
                f"cache buffers of {rows} rows in {self.dtype}",
            )
            _require(
                buffer.shape[2] >= positions and buffer.shape[3] == self.head_dim,
                f"cache buffers with {positions} positions of size {self.head_dim}",
            )
        _require(
            keys.stride() == values.stride() and keys.stride()[2:] == (self.head_dim, 1),
            "key and value buffers of one layout, positions contiguous",
        )
        return keys.data_ptr(), values.data_ptr(), keys.stride(0), keys.stride(1)

    def _tokens(self, states: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, kv: int):
        """The token count of `states` (tokens, (heads + 2 kv heads) x head size) and their
        rotary angles (tokens, head size)."""
        tokens = self._rows(states, (self.group + 2) * kv * self.head_dim)
        angles = {self._rows(cos, self.head_dim), self._rows(sin, self.head_dim)}
        _require(angles == {tokens}, "rotary angles for every token")
        return tokens

    def rms_norm(
        self,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        epsilon: float,
        delta: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """`weight` x RMS-normalized `hidden` (rows, width), after `hidden += delta` in place."""
        width = int(weight.shape[-1])
        rows = self._rows(hidden, width)
        _require(
            weight.dtype == self.dtype and weight.shape == (width,) and weight.is_contiguous(),
            "a norm weight of the hidden width",
        )
        _require(delta is None or self._rows(delta, width) == rows, "a delta like hidden")
        out = torch.empty_like(hidden)
        pointers = (hidden.data_ptr(), None if delta is None else delta.data_ptr())
        self._library.rms_norm(
            *pointers, weight.data_ptr(), out.data_ptr(), rows, width, epsilon, _threads()
        )
        return out

    def silu_mul(self, gate_up: torch.Tensor) -> torch.Tensor:
        """silu(gate) * up for rows (rows, 2 x width) laid out [gate | up]."""
        width = int(gate_up.shape[-1]) // 2
        rows = self._rows(gate_up, 2 * width)
        out = gate_up.new_empty((rows, width))
        self._library.silu_mul(gate_up.data_ptr(), out.data_ptr(), rows, width, _threads())
        return out

    def attend(
        self,
        states: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        buffers: tuple[torch.Tensor, torch.Tensor, int],
        mask: torch.Tensor,
        scale: float,
    ) -> torch.Tensor:
        """A layer's attention for one new token per row: `states` (rows, (heads + 2 kv heads)
        x head size) are the q/k/v projections, `cos`/`sin` (rows, head size) the rotary
        angles, `buffers` the cache's key and value buffers (rows, kv heads, room, head size)
        with the position to write, `mask` (rows, position + 1, int64) the rows' padding mask.
        Returns (rows, heads x head size)."""
        keys, values, position = buffers
        kv_heads = int(keys.shape[1])
        rows = self._tokens(states, cos, sin, kv_heads)
        cache = self._cache((keys, values), rows, position + 1)
        _require(
            mask.dtype == torch.long and mask.shape == (rows, position + 1) and mask.stride(1) == 1,
            "an int64 mask (rows, position + 1)",
        )
        out = states.new_empty((rows, kv_heads * self.group * self.head_dim))
        inputs = (states.data_ptr(), cos.data_ptr(), sin.data_ptr())
        masking = (mask.data_ptr(), mask.stride(0))
        self._library.attend(
            *inputs, *cache, position, *masking, scale, out.data_ptr(), rows, kv_heads, _threads()
        )
        return out

    def prefill_attend(
        self,
        states: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        buffers: tuple[torch.Tensor, torch.Tensor],
        packing: PackedRows,
        scale: float,
    ) -> torch.Tensor:
        """A layer's attention over prompts packed one after another (`packing`): `states`
        (tokens, (heads + 2 kv heads) x head size), `cos`/`sin` (tokens, head size); every key
        and value goes into `buffers` (rows, kv heads, room, head size), each row's prompt
        left-padded to `packing.width`. Returns (tokens, heads x head size)."""
        kv_heads = int(buffers[0].shape[1])
        tokens = self._tokens(states, cos, sin, kv_heads)
        cache = self._cache(buffers, len(packing.lengths), packing.width)
        _require(packing.tokens() == tokens, "one packed position per token")
        _require(
            all(t.dtype == torch.long and t.is_contiguous() for t in packing[:3]),
            "contiguous int64 packing",
        )
        out = states.new_empty((tokens, kv_heads * self.group * self.head_dim))
        inputs = (states.data_ptr(), cos.data_ptr(), sin.data_ptr())
        rows = (packing.token_rows.data_ptr(), packing.positions.data_ptr())
        packed = (packing.width, *rows, packing.lengths.data_ptr())
        self._library.prefill_attend(
            *inputs, *cache, *packed, scale, out.data_ptr(), tokens, kv_heads, _threads()
        )
        return out


def _threads() -> int:
    """OpenMP threads for a kernel: as many as torch's own operators use."""
    return torch.get_num_threads()


def _require(condition: bool, expected: str) -> None:
    if not condition:
        raise ValueError(f"decode kernel input: expected {expected}")


class PackedRows(NamedTuple):
    """Prompts packed one after another: each token's row and position in it, each row's
    length (contiguous int64 tensors), and the longest length."""

    token_rows: torch.Tensor
    positions: torch.Tensor
    lengths: torch.Tensor
    width: int

    @classmethod
    def of(cls, mask: torch.Tensor) -> PackedRows:
        """The packing of a left-padded batch's rows, from its mask (rows, width): 1 on a
        row's tokens, 0 on its padding."""
        lengths = mask.sum(dim=1)
        if not len(lengths) or int(lengths.min()) < 1:
            raise ValueError("packed rows need one token or more each")
        token_rows, columns = mask.nonzero(as_tuple=True)  # row by row, as the tokens pack
        positions = columns - (mask.shape[1] - lengths)[token_rows]
        return cls(token_rows.contiguous(), positions, lengths, int(mask.shape[1]))

    def tokens(self) -> int:
        return int(self.token_rows.shape[0])


def _compiler() -> tuple[str, str] | None:
    """(the C compiler's command, its version text), or None when it does not run."""
    command = os.environ.get("CC", "cc")
    try:
        found = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (command, found.stdout) if found.returncode == 0 else None


def _cpu_features() -> str:
    """What -march=native compiles for: the CPU's feature flags (x86 `flags`, Arm `Features`)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor()
    return "".join(line for line in text.splitlines() if line.startswith(("flags", "Features")))


def _build(defines: list[str]) -> Path | None:
    """The compiled library for these defines, built once into the cache; None when no
    compiler builds it."""
    compiler = _compiler()
    if compiler is None:
        return None
    command, version = compiler
    source = SOURCE.read_bytes()
    for threading in (_THREADED, []):
        flags = [*_OPTIMIZE, *threading, *defines]
        identity = [source, " ".join(flags).encode(), version.encode(), _cpu_features().encode()]
        key = hashlib.sha256(b"\0".join(identity)).hexdigest()[:24]
        library = cache_dir() / "kernels" / f"decode-{key}.so"
        if library.exists() or _compile(command, flags, library):
            return library
    return None


def _compile(command: str, flags: list[str], library: Path) -> bool:
    """Compile the source into `library`, through a temporary sibling renamed into place (so
    another process never loads a partial file); False, the reason logged, when it fails."""
    try:
        library.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=library.parent, suffix=".so.partial")
    except OSError as error:
        _log.info("cannot write the kernel cache: %s", error)
        return False
    os.close(handle)
    arguments = [command, *flags, str(SOURCE), "-o", temporary, "-lm"]
    built = subprocess.run(arguments, capture_output=True, text=True)
    if built.returncode != 0:
        os.unlink(temporary)
        _log.info("building %s with %s failed: %s", SOURCE.name, flags, built.stderr[-2000:])
        return False
    os.replace(temporary, library)
    return True


@functools.cache
def decode_kernels(head_dim: int, group: int, dtype: torch.dtype) -> DecodeKernels | None:
    """The kernels for this head size, query heads per key/value head and dtype; None where
    they do not apply (another dtype, a head size not a multiple of 8, no C compiler)."""
    if dtype not in _DTYPES or head_dim % 8:
        return None
    defines = [f"-DHEAD_DIM={head_dim}", f"-DGROUP={group}", f"-DELEM_BF16={_DTYPES[dtype]}"]
    library = _build(defines)
    if library is None:
        _log.warning(
            "loopfix: no C compiler built %s (set CC; the reason is logged at INFO); the "
            "decode engine runs on torch's operators, slower on CPU",
            SOURCE.name,
        )
        return None
    return DecodeKernels(ctypes.CDLL(str(library)), head_dim, group, dtype)

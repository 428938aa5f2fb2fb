"""loopfix's decode engine for transformers models (docs/architecture.md).

- `loop.py`: `DecodeEngine`, the decode loop: continuous batching, a seed per request, guard
  chains with rollback, top-1 / entropy capture;
- `kv_batch.py`: `KVBatch`, the running rows' KV cache (prefill, step, drop rows, join
  batches), on the model's own forward - transformers' math, the reference path - or on
- `fast/`: the speed-ups, each computing what transformers does: linear layers on packed
  oneDNN weights (`onednn.accelerate`, a handle held only around the engine's own forward
  calls), a Llama-architecture model's fused prefill and decode steps (`llama_fused.py`) on
  the compiled kernels of `decode_kernels.c` (`decode_kernels.py`);
- `sampling.py`: the sampler's penalties and warpers, counter-based per-request draws.

`backends/hf.py` is the `Backend` over it. The engine changes nothing of the model it is given.
"""

from loopfix.engine.loop import DecodeEngine, EngineResult, eos_set

__all__ = ["DecodeEngine", "EngineResult", "eos_set"]

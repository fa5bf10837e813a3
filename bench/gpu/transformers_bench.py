"""transformers end to end with FlashIR attention (flashir.integrations.
transformers), random weights, no hub:

* correctness: a Llama-3-8B-shaped model (fewer layers) and a Gemma-2-shaped
  one (soft-cap 50, a sliding window shorter than the prompts), greedy
  `--new` tokens over a batch of ragged prompts through generate() ("fir"
  vs "sdpa"; Gemma-2 vs "eager", since transformers' sdpa drops its
  soft-cap) and through generate_batch ("paged|fir" vs the same reference);
  where tokens differ, the reference's top-2 logit margin at the first
  difference and the logits' deviation before it (bf16 ties);
* decode step time: generate() "fir" vs "sdpa" and generate_batch
  "paged|fir" vs "paged|sdpa" on the same batch, with attention's share of
  the GPU time (torch.profiler, kernels by name);
* a serving benchmark: a seeded trace (Poisson arrivals, ShareGPT-like
  lognormal prompt and output lengths; "variable": a few long prompts among
  short ones) replayed through the continuous-batching manager with
  "paged|fir" and "paged|sdpa": TTFT, inter-token latency (median, P99),
  throughput.

    python3 bench/gpu/transformers_bench.py --out OUT [--layers 8] \
        [--steps correctness,decode,serve]
"""
import argparse
import json
import math
import os
import random
import re
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
from flashir.integrations import transformers as fir  # noqa: E402

import transformers  # noqa: E402
from transformers import (ContinuousBatchingConfig, Gemma2Config, Gemma2ForCausalLM,  # noqa: E402
                          GenerationConfig, LlamaConfig, LlamaForCausalLM)

ATTENTION_KERNEL = re.compile(r"fmha|flash|attention|_decode_\d|_prefill_\d|_merge_\d|sdpa|"
                              r"scaled_dot")


def llama(layers):
    return LlamaForCausalLM, LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336,
        num_hidden_layers=layers, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
        max_position_embeddings=8192, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        tie_word_embeddings=False)


def gemma(layers, window):
    return Gemma2ForCausalLM, Gemma2Config(
        vocab_size=256000, hidden_size=2304, intermediate_size=9216, num_hidden_layers=layers,
        num_attention_heads=8, num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256,
        sliding_window=window, attn_logit_softcapping=50.0, final_logit_softcapping=30.0)


def build(spec, impl):
    cls, config = spec
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = cls._from_config(config, attn_implementation=impl, dtype=torch.bfloat16)
    return model.eval()


def prompts(seed, lengths, vocab):
    rng = random.Random(seed)
    return [[rng.randrange(10, vocab) for _ in range(n)] for n in lengths]


def gen_config(new):
    return GenerationConfig(max_new_tokens=new, min_new_tokens=new, do_sample=False,
                            eos_token_id=-1, pad_token_id=0)


class Force:
    """A logits processor that makes generate() follow given tokens (teacher
    forcing): the raw logits of every step then come from one trajectory."""

    def __init__(self, tokens, width):
        self.tokens = torch.tensor(tokens, device="cuda")
        self.width = width

    def __call__(self, input_ids, scores):
        step = input_ids.shape[1] - self.width
        forced = torch.full_like(scores, -math.inf)
        forced.scatter_(1, self.tokens[:, step:step + 1], 0.0)
        return forced


def generate(model, impl, batch, new, logits=True, force=None):
    """generate() over left-padded prompts: (tokens [B, new], logits [B,
    new, V] float32 or None); `force`: tokens [B, new] to follow."""
    from transformers import LogitsProcessorList
    model.set_attn_implementation(impl)
    width = max(map(len, batch))
    ids = torch.zeros(len(batch), width, dtype=torch.long, device="cuda")
    mask = torch.zeros_like(ids)
    for i, p in enumerate(batch):
        ids[i, width - len(p):] = torch.tensor(p)
        mask[i, width - len(p):] = 1
    config = gen_config(new)
    config.output_logits, config.return_dict_in_generate = logits, True
    processors = LogitsProcessorList([Force(force, width)] if force is not None else [])
    out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config,
                         logits_processor=processors)
    lg = torch.stack(out.logits, 1).float() if logits else None
    return out.sequences[:, width:].tolist(), lg


def cb_config(**kw):
    base = dict(block_size=32, num_blocks=4096, max_batch_tokens=2048,
                allow_block_sharing=False, scheduler_type="fifo")
    base.update(kw)
    return ContinuousBatchingConfig(**base)


def generate_batch(model, impl, batch, new):
    model.set_attn_implementation(impl)
    out = model.generate_batch(batch, generation_config=gen_config(new),
                               continuous_batching_config=cb_config(), record_timestamps=True,
                               warmup=False)
    results = [out[f"req_{i}"] for i in range(len(batch))]
    bad = [r.error for r in results if r.error]
    if bad:
        raise RuntimeError(f"generate_batch failed: {bad[0]}")
    return [r.generated_tokens for r in results], results


def compare(ref_tokens, ref_logits, got_tokens, got_logits=None):
    """Per request: identical, or the first difference with the reference's
    top-2 margin there and the logits' deviation before it."""
    rows = []
    for i, (a, b) in enumerate(zip(ref_tokens, got_tokens)):
        row = {"identical": a == b}
        if a != b:
            t = next(j for j, (x, y) in enumerate(zip(a, b)) if x != y) if \
                any(x != y for x, y in zip(a, b)) else min(len(a), len(b))
            top = ref_logits[i, t].topk(2).values
            row.update(first_difference=t, ref_margin=float(top[0] - top[1]))
            if got_logits is not None and t > 0:
                row["max_logit_dev_before"] = float((got_logits[i, :t + 1] -
                                                     ref_logits[i, :t + 1]).abs().max())
        if got_logits is not None:
            n = row.get("first_difference", len(a) - 1) + 1
            scale = float(ref_logits[i, :n].abs().max())
            dev = float((got_logits[i, :n] - ref_logits[i, :n]).abs().max())
            row.update(logit_dev=dev, logit_scale=scale)
        rows.append(row)
    ident = sum(r["identical"] for r in rows)
    # A difference counts as a bf16 tie when the reference's top-2 margin
    # there is within the logits' deviation (the two paths' rounding).
    ties = sum(1 for r in rows if not r["identical"] and
               r["ref_margin"] <= max(r.get("max_logit_dev_before", 0.0), 0.05))
    return {"identical": ident, "requests": len(rows), "bf16_ties": ties,
            "unexplained": len(rows) - ident - ties, "rows": rows}


def correctness(args, out):
    lengths = [13, 200, 57, 700, 5, 333, 96, 1]
    for name, spec, ref_impl in (("llama3_8b_shape", llama(args.layers), "sdpa"),
                                 ("gemma2_shape", gemma(args.layers, 128), "eager")):
        model = build(spec, ref_impl)
        batch = prompts(1, lengths, spec[1].vocab_size)
        ref, ref_logits = generate(model, ref_impl, batch, args.new)
        got, got_logits = generate(model, fir.NAME, batch, args.new)
        paged, _ = generate_batch(model, fir.PAGED_NAME, batch, args.new)
        res = {"reference": ref_impl,
               "generate": compare(ref, ref_logits, got, got_logits),
               "generate_batch": compare(ref, ref_logits, paged)}
        # Every step's logits along the reference's tokens (decode kernels
        # included), next to two of transformers' own implementations.
        _, forced = generate(model, fir.NAME, batch, args.new, force=ref)
        dev = (forced - ref_logits).abs()
        res["teacher_forced"] = {"steps": args.new, "max_logit_dev": float(dev.max()),
                                 "mean_logit_dev": float(dev.mean()),
                                 "logit_scale": float(ref_logits.abs().max())}
        if ref_impl == "sdpa":  # the bf16 noise floor: eager vs sdpa
            _, eager = generate(model, "eager", batch, args.new, force=ref)
            floor = (eager - ref_logits).abs()
            res["teacher_forced"].update(eager_vs_sdpa_max_logit_dev=float(floor.max()),
                                         eager_vs_sdpa_mean_logit_dev=float(floor.mean()))
        if name.startswith("llama"):
            sdpa_paged, _ = generate_batch(model, "paged|sdpa", batch, args.new)
            res["paged_sdpa_vs_sdpa"] = compare(ref, ref_logits, sdpa_paged)
        out[name] = res
        print(name, json.dumps({k: (v if not isinstance(v, dict) else
                                    {x: y for x, y in v.items() if x != "rows"})
                                for k, v in res.items()}), flush=True)
        del model
        torch.cuda.empty_cache()


def profiled(fn):
    """fn()'s GPU time by kernel (torch.profiler): {"attention_ms",
    "gpu_ms", "wall_ms", "top": the five longest kernels}."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    wall = (time.perf_counter() - start) * 1e3
    kernels = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if not e.key.startswith("ProfilerStep"):
            kernels.append((t / 1e3, e.key))
    kernels.sort(reverse=True)
    return {"attention_ms": sum(t for t, k in kernels if ATTENTION_KERNEL.search(k)),
            "gpu_ms": sum(t for t, _ in kernels), "wall_ms": wall,
            "top": [[round(t, 3), k[:90]] for t, k in kernels[:5]]}


def decode_timing(args, out):
    spec = llama(args.layers)
    model = build(spec, "sdpa")
    batch = prompts(2, [1024] * 16, spec[1].vocab_size)
    rows = {}
    # sdpa twice (first and last), to see order effects.
    for label, impl in (("sdpa", "sdpa"), (fir.NAME, fir.NAME), ("sdpa_again", "sdpa")):
        generate(model, impl, batch, 4, logits=False)  # warm-up (JIT, allocator)
        times = {}
        for n in (1, 33):
            torch.cuda.synchronize()
            start = time.perf_counter()
            generate(model, impl, batch, n, logits=False)
            torch.cuda.synchronize()
            times[n] = time.perf_counter() - start
        prof = profiled(lambda: generate(model, impl, batch, 9, logits=False))
        rows[label] = {"step_ms": (times[33] - times[1]) / 32 * 1e3,
                       "attention_share": prof["attention_ms"] / prof["gpu_ms"],
                       "profile_9_steps": prof}
    for impl in ("paged|sdpa", fir.PAGED_NAME):
        generate_batch(model, impl, batch[:2], 4)  # warm-up
        _, results = generate_batch(model, impl, batch, 33)
        itl = [b - a for r in results for a, b in zip(r.timestamps[1:], r.timestamps[2:])]
        prof = profiled(lambda: generate_batch(model, impl, batch, 9))
        rows[impl] = {"step_ms": statistics.median(itl) * 1e3,
                      "attention_share": prof["attention_ms"] / prof["gpu_ms"],
                      "profile_9_steps": prof}
    out["decode_step"] = {"batch": 16, "prompt": 1024, "layers": args.layers, **rows}
    print("decode_step", json.dumps(out["decode_step"]), flush=True)
    del model
    torch.cuda.empty_cache()


def trace(seed, n, rate, variable):
    """(arrival s, prompt length, output length) of n requests."""
    rng = random.Random(seed)
    t, rows = 0.0, []
    for i in range(n):
        t += rng.expovariate(rate)
        if variable and rng.random() < 0.1:
            prompt = rng.randint(2048, 4096)
        elif variable:
            prompt = rng.randint(32, 256)
        else:
            prompt = int(min(2048, max(16, rng.lognormvariate(math.log(256), 0.9))))
        output = int(min(256, max(8, rng.lognormvariate(math.log(96), 0.7))))
        rows.append((t, prompt, output))
    return rows


def serve(model, impl, requests, vocab):
    """Replays `requests` through the continuous-batching manager."""
    model.set_attn_implementation(impl)
    gc = GenerationConfig(do_sample=False, eos_token_id=-1, pad_token_id=0)
    manager = model.init_continuous_batching(generation_config=gc,
                                             continuous_batching_config=cb_config())
    manager.start()
    rng = random.Random(7)
    results = {}
    start = time.perf_counter()
    try:
        for i, (at, plen, olen) in enumerate(requests):
            while time.perf_counter() - start < at:
                r = manager.get_result(timeout=0.001)
                if r is not None:
                    results[r.request_id] = r
            manager.add_request([rng.randrange(10, vocab) for _ in range(plen)],
                                request_id=f"r{i}", max_new_tokens=olen, record_timestamps=True)
        deadline = time.perf_counter() + 300
        while len(results) < len(requests) and time.perf_counter() < deadline:
            r = manager.get_result(timeout=1)
            if r is not None:
                results[r.request_id] = r
    finally:
        manager.stop(block=True)
    done = [r for r in results.values() if not r.error and r.timestamps]
    ttft = [r.timestamps[0] - r.created_time for r in done]
    itl = [b - a for r in done for a, b in zip(r.timestamps, r.timestamps[1:])]
    tokens = sum(len(r.generated_tokens) for r in done)
    span = max(r.timestamps[-1] for r in done) - min(r.created_time for r in done)
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
    return {"requests": len(requests), "completed": len(done), "tokens": tokens,
            "ttft_median_ms": statistics.median(ttft) * 1e3,
            "itl_median_ms": statistics.median(itl) * 1e3, "itl_p99_ms": q(itl, 0.99) * 1e3,
            "throughput_tok_s": tokens / span}


def serving(args, out):
    spec = llama(args.layers)
    model = build(spec, "sdpa")
    vocab = spec[1].vocab_size
    warm = trace(99, 6, 50.0, False)
    rows = {}
    for workload, variable, rate in (("sharegpt_like", False, args.rate),
                                     ("variable", True, args.rate)):
        requests = trace(2026, args.requests, rate, variable)
        rows[workload] = {"trace": {"seed": 2026, "requests": args.requests, "rate_per_s": rate,
                                    "prompt_tokens": sum(r[1] for r in requests),
                                    "output_tokens": sum(r[2] for r in requests)}}
        for impl in ("paged|sdpa", fir.PAGED_NAME):
            serve(model, impl, warm, vocab)  # JIT and allocator warm-up
            rows[workload][impl] = serve(model, impl, requests, vocab)
            print(workload, impl, json.dumps(rows[workload][impl]), flush=True)
    out["serving"] = {"layers": args.layers, **rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--rate", type=float, default=8.0)
    ap.add_argument("--steps", default="correctness,decode,serve")
    args = ap.parse_args()
    fir.register()
    out = {"device": torch.cuda.get_device_name(), "transformers": transformers.__version__,
           "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
           "command": " ".join(sys.argv)}
    steps = args.steps.split(",")
    try:
        if "correctness" in steps:
            correctness(args, out)
        if "decode" in steps:
            decode_timing(args, out)
        if "serve" in steps:
            serving(args, out)
    finally:
        with open(os.path.join(args.out, "transformers_bench.json"), "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

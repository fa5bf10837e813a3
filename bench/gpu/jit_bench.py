"""JIT latency on the GPU machine: the first plan() of a FlashInfer-named
wrapper for a new configuration from empty caches (FlashIR's, each of
--repeat times, and the driver's, off; cold: compile, load, plan), a new
wrapper's plan() of it from the disk cache (warm) and a re-plan; each run once and checked against a
float64 reference; next to FlexAttention's cold compile of the same variant
in the same process. Needs the static compiler
(scripts/build-jit-compiler.sh; FLASHIR_COMPILER) and libflashir_c.so
(FLASHIR_LIB or build-runtime/).

    python3 bench/gpu/jit_bench.py --out OUT
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import flashir  # noqa: E402
from flashir import jit  # noqa: E402

HQ, HKV, D, PAGE = 32, 8, 128, 16


def batch(gen, lens):
    pages = [(n + PAGE - 1) // PAGE for n in lens]
    num_pages = sum(pages) + 4
    perm = torch.randperm(num_pages, generator=gen).tolist()
    indptr, indices = [0], []
    for p in pages:
        indices += perm[len(indices):len(indices) + p]
        indptr.append(len(indices))
    last = [n - (p - 1) * PAGE for n, p in zip(lens, pages)]
    shape = (num_pages, PAGE, HKV, D)
    kp = torch.randn(shape, generator=gen).to("cuda", torch.bfloat16)
    vp = torch.randn(shape, generator=gen).to("cuda", torch.bfloat16)
    q = torch.randn((len(lens), HQ, D), generator=gen).to("cuda", torch.bfloat16)
    i32 = lambda x: torch.tensor(x, dtype=torch.int32)
    return dict(q=q, kp=kp, vp=vp, qo=i32(list(range(len(lens) + 1))), indptr=i32(indptr),
                indices=i32(indices), last=i32(last), num_pages=num_pages, lens=lens)


def reference(b, cap=None, window=None):
    """float64 decode of every request (GQA); with a soft-cap `cap` or the
    per-request `window` (keys kpos >= n - 1 - window[r] where >= 0)."""
    out = []
    for r, n in enumerate(b["lens"]):
        ids = b["indices"][b["indptr"][r]:b["indptr"][r + 1]].long().cuda()
        k = b["kp"][ids].reshape(-1, HKV, D)[:n].double()
        v = b["vp"][ids].reshape(-1, HKV, D)[:n].double()
        q = b["q"][r].double().view(HKV, HQ // HKV, D)
        s = torch.einsum("hgd,nhd->hgn", q, k) / math.sqrt(D)
        if cap is not None:
            s = cap * torch.tanh(s / cap)
        if window is not None and window[r] >= 0:
            s[..., :max(0, n - 1 - int(window[r]))] = -math.inf
        out.append(torch.einsum("hgn,nhd->hgd", s.softmax(-1), v).reshape(HQ, D))
    return torch.stack(out)


def timed_plan(wrapper_class, b, plan_kw, wrapper=None):
    """(ms, wrapper): a wrapper (new unless given) and its plan() of batch
    `b` with FlashInfer's options `plan_kw` -- from an empty cache the
    compile, the kernels' load and the plan."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    wrapper = wrapper or wrapper_class(torch.empty(1 << 20, dtype=torch.uint8, device="cuda"))
    n = len(b["lens"])
    if wrapper_class is flashir.BatchDecodeWithPagedKVCacheWrapper:
        wrapper.plan(b["indptr"], b["indices"], b["last"], HQ, HKV, D, PAGE,
                     q_data_type=torch.bfloat16, **plan_kw)
    else:
        wrapper.plan(torch.arange(n + 1, dtype=torch.int32), b["indptr"], b["indices"],
                     b["last"], HQ, HKV, D, PAGE, q_data_type=torch.bfloat16, **plan_kw)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3, wrapper


def flex_cold(score_mod):
    """First and second call of a compiled FlexAttention decode (ms)."""
    from torch.nn.attention.flex_attention import flex_attention
    torch._dynamo.reset()
    fn = torch.compile(flex_attention)
    q = torch.randn(4, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(4, HKV, 1024, D, device="cuda", dtype=torch.bfloat16)
    times = []
    for _ in range(2):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn(q, k, k, score_mod=score_mod, enable_gqa=True)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--repeat", type=int, default=3,
                    help="cold plans per configuration, each from a new empty cache")
    args = ap.parse_args()
    # The driver's cache of compiled PTX stays off (set before CUDA starts):
    # every PTX load compiles, as on a machine that never ran the kernel.
    os.environ["CUDA_CACHE_DISABLE"] = "1"
    chip, image = jit.detect_chip()
    rows = {"device": torch.cuda.get_device_name(), "chip": chip, "image": image,
            "bundle_image": jit._image(None), "ptxas": jit.find_ptxas(),
            "compiler": jit.find_compiler(), "repeat": args.repeat}
    gen = torch.Generator().manual_seed(3)
    b = batch(gen, [1, 300, 1000, 37])
    decode, prefill = flashir.BatchDecodeWithPagedKVCacheWrapper, \
        flashir.BatchPrefillWithPagedKVCacheWrapper
    runs = {"decode_plain": (decode, {}, {}),
            "decode_soft_cap": (decode, dict(logits_soft_cap=30.0), {"cap": 30.0}),
            "decode_window": (decode, dict(window_left=200),
                              {"window": [200] * len(b["lens"])}),
            "decode_rope": (decode, dict(pos_encoding_mode="ROPE_LLAMA"), None),
            "prefill_causal": (prefill, dict(causal=True), {})}
    for name, (cls, plan_kw, ref_args) in runs.items():
        row = {"cold_plan_ms": [], "cold_cached": [], "cold_compile_ms": []}
        for _ in range(args.repeat):
            os.environ["FLASHIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="flashir-cache-")
            cold_ms, wrapper = timed_plan(cls, b, plan_kw)
            row["cold_plan_ms"].append(cold_ms)
            row["cold_cached"].append(wrapper.compile_info["cached"])
            row["cold_compile_ms"].append(wrapper.compile_info["ms"])
        row["cold_plan_median_ms"] = sorted(row["cold_plan_ms"])[len(row["cold_plan_ms"]) // 2]
        warm_ms, fresh = timed_plan(cls, b, plan_kw)
        replan_ms, _ = timed_plan(cls, b, plan_kw, wrapper)
        row.update({"warm_plan_ms": warm_ms, "warm_cached": fresh.compile_info["cached"],
                    "warm_lookup_ms": fresh.compile_info["ms"], "replan_ms": replan_ms})
        out = wrapper.run(b["q"], (b["kp"], b["vp"]))
        row["nan"] = bool(out.isnan().any())
        if ref_args is not None:  # rope: tests/test_api.py checks it
            ref = reference(b, **ref_args)
            row["rel_err"] = ((out.double() - ref).norm() / ref.norm()).item()
        rows[name] = row
        print(name, json.dumps(row))
    cap = 30.0
    rows["flex_plain_ms"] = flex_cold(None)
    rows["flex_soft_cap_ms"] = flex_cold(lambda s, b, h, q, k: cap * torch.tanh(s / cap))
    print("flex", rows["flex_plain_ms"], rows["flex_soft_cap_ms"])
    with open(os.path.join(args.out, "jit_bench.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

"""Benchmarks of the decode coverage targets (issue 23), FlashIR kernels timed
round-robin in one process next to SDPA-cuDNN on the same shapes:

- RoPE fused into decode (rope_d128_h32_p16, a user variant with query and
  key hooks) vs the plain decode (plain_h32_p16), and vs "RoPE applied to
  the whole K pool by PyTorch, then the plain decode" (unfused);
- head dims 96 / 192 vs 128 (plain_d96_h32_p16, plain_d192_h32_p16 vs
  plain_h32_p16), in bytes per second;
- group 16 vs group 8 (plain_h64_g16_p16: Hq 64 / Hkv 4 vs plain_h64_p16:
  Hq 64 / Hkv 8), in bytes per second;
- HND vs NHD pools (plain_h32_p16_hnd vs plain_h32_p16);
- prefill (B4 S4096 Hq32 Hkv8 D128 bf16, the same tiles): custom_mask (random
  bits, and the causal mask as bits) and sigmoid (prefill_shapes.mlir) next to causal and plain softmax
  (prefill_kernels.mlir), in TFLOP/s with causal counting half.

    python3 bench/gpu/coverage_bench.py --bundle build-gpu/bundle \
        --shapes build-gpu/bundle-shapes --prefill build-gpu/bundle-prefill \
        --prefill-shapes build-gpu/bundle-prefill-shapes --out $OUT
"""

import argparse
import json
import math
import os
import statistics
import time

import torch

import gpu_check as gc


def load(bundle, kind="decode"):
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    target = [t for t in manifest["targets"] if t["chip"] == "sm_90a"][0]
    module = gc.Module(open(os.path.join(bundle, target["cubin"]), "rb").read())
    kernels = gc.load_kernels(manifest, module, "sm_90a")
    return {name.rsplit(f"_{kind}_", 1)[0]: k for name, k in kernels.items()}


def rope_tables(k, batch, log2_theta):
    """cos / sin of every pool row's position (what an unfused stack keeps
    cached), [pages, page, 1, D] in the pool's dtype."""
    pages, page = batch["kp"].shape[0], batch["kp"].shape[1]
    pos = torch.zeros(pages, page, device="cuda", dtype=torch.float32)
    indptr = batch["indptr_l"]
    ids = torch.tensor(batch["indices_l"], device="cuda", dtype=torch.long)
    nth = torch.cat([torch.arange(indptr[b + 1] - indptr[b]) for b in range(len(indptr) - 1)])
    slots = torch.arange(page, dtype=torch.float32)
    pos[ids] = (nth[:, None] * page + slots[None, :]).to("cuda")
    half = k.d // 2
    i = torch.arange(k.d, device="cuda") % half
    freq = torch.pow(2.0, -log2_theta * i.float() / half)
    angle = pos[..., None] * freq
    return (torch.cos(angle)[:, :, None, :].to(k.dtype),
            torch.sin(angle)[:, :, None, :].to(k.dtype))


def prefill_variants(base, shapes, gen, timed, b=4, s=4096):
    """custom_mask and sigmoid prefill next to causal and plain softmax
    prefill of the same tiles (q 128, kv 64, 4 warps, 2 stages)."""
    # custom_mask: random bits (every tile partly visible); custom_mask_causal:
    # the causal mask given as bits (counted like causal, half the scores).
    kernels = {"causal": base["causal_d128_g4_p16_bf16"],
               "plain": base["plain_d128_g4_p16_bf16"],
               "custom_mask": shapes["custom_mask_d128_g4_p16_bf16"],
               "custom_mask_causal": shapes["custom_mask_d128_g4_p16_bf16"],
               "sigmoid": shapes["sigmoid_d128_g4_p16_bf16"]}
    patterns = {"custom_mask": "random", "custom_mask_causal": "causal"}
    batches, calls = [], {}
    for name, k in kernels.items():
        batches.append(gc.make_batch(k, [s] * b, [s] * b, gen, shared_pages=False,
                                     mask_pattern=patterns.get(name, "mixed")))
        calls[name] = gc.run_kernel(k, batches[-1])[2]
    ms = timed(calls)
    full = 4 * b * 32 * s * s * 128
    half = ("causal", "custom_mask_causal")
    tflops = {name: (full / 2 if name in half else full) / t / 1e9
              for name, t in ms.items()}
    return {"case": f"prefill B{b} S{s} Hq32 Hkv8 D128 bf16 (q128 kv64)",
            **{f"{n}_ms": t for n, t in ms.items()},
            **{f"{n}_TFLOPs": v for n, v in tflops.items()},
            "custom_mask_vs_causal_TFLOPs": tflops["custom_mask"] / tflops["causal"],
            "custom_mask_causal_vs_causal_TFLOPs":
                tflops["custom_mask_causal"] / tflops["causal"],
            "custom_mask_vs_plain_time": ms["plain"] / ms["custom_mask"],
            "sigmoid_vs_softmax_time": ms["plain"] / ms["sigmoid"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--prefill", default=None, help="bundle of prefill_kernels.mlir")
    ap.add_argument("--prefill-shapes", default=None, help="bundle of prefill_shapes.mlir")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    base, shapes = load(args.bundle), load(args.shapes)
    gen = torch.Generator().manual_seed(11)
    rows = []

    # Every batch a launch reads stays alive until the end (a launch holds
    # raw pointers to its page table, queries and parameters).
    batches = []

    def batch_of(k, b, l):
        batches.append(gc.make_batch(k, [1] * b, [l] * b, gen, shared_pages=False))
        return batches[-1]

    def timed(calls):
        """Median of 5 round-robin rounds of each call's median."""
        rounds = {name: [] for name in calls}
        for _ in range(5):
            for name, fn in calls.items():
                rounds[name].append(gc.time_ms(fn, reps=20, warmup=3))
        return {name: statistics.median(t) for name, t in rounds.items()}

    def kv_bytes(k, b, l):
        return b * l * k.hkv * k.d * 2 * 2

    def cudnn_ms(k, b, l):
        from torch.nn.attention import SDPBackend
        q = torch.randn(b, k.hq, 1, k.d, device="cuda", dtype=k.dtype)
        kc = torch.randn(b, k.hkv, l, k.d, device="cuda", dtype=k.dtype)
        try:
            return gc.sdpa_ms(SDPBackend.CUDNN_ATTENTION, q, kc, torch.randn_like(kc))
        except Exception:
            return None

    # Fused RoPE vs plain vs unfused (PyTorch RoPE over the K pool + plain).
    for b, l in ((64, 4096), (128, 2048)):
        plain, rope = base["plain_h32_p16"], shapes["rope_d128_h32_p16"]
        rope128 = shapes["rope128_d128_h32_p16"]
        pb, rb = batch_of(plain, b, l), batch_of(rope, b, l)
        plain_call = gc.run_kernel(plain, pb)[2]
        rope_call = gc.run_kernel(rope, rb)[2]
        rope128_call = gc.run_kernel(rope128, batch_of(rope128, b, l))[2]
        cos, sin = rope_tables(plain, pb, math.log2(10000.0))
        kp = pb["kp"]
        half = plain.d // 2
        rotated = torch.empty_like(kp)

        on_rotated = dict(pb, kp=rotated)
        plain_on_rotated = gc.run_kernel(plain, on_rotated)[2]

        def unfused():
            # Eager, as transformers' apply_rotary_pos_emb: k * cos +
            # rotate_half(k) * sin into the pool the decode reads.
            torch.cat([-kp[..., half:], kp[..., :half]], dim=-1, out=rotated)
            rotated.mul_(sin).addcmul_(kp, cos)
            plain_on_rotated()

        def rope_into(dst, src, c, s_):
            dst.copy_(src * c + torch.cat([-src[..., half:], src[..., :half]], dim=-1) * s_)
        compiled = torch.compile(rope_into)

        def unfused_compiled():
            # The same RoPE as one fused elementwise kernel (torch.compile).
            compiled(rotated, kp, cos, sin)
            plain_on_rotated()
        unfused_compiled()
        ms = timed({"plain": plain_call, "rope_fused": rope_call, "rope128_fused": rope128_call,
                    "rope_unfused": unfused, "rope_unfused_compiled": unfused_compiled})
        nbytes = kv_bytes(plain, b, l)
        row = {"case": f"RoPE B{b} L{l} Hq32 Hkv8 D128", **{f"{k}_ms": v for k, v in ms.items()},
               "plain_TBps": nbytes / ms["plain"] / 1e9,
               "rope_fused_TBps": nbytes / ms["rope_fused"] / 1e9,
               "fused_vs_plain": ms["plain"] / ms["rope_fused"],
               "fused_vs_unfused": ms["rope_unfused"] / ms["rope_fused"],
               "rope128_fused_vs_plain": ms["plain"] / ms["rope128_fused"],
               "rope128_fused_vs_unfused": ms["rope_unfused"] / ms["rope128_fused"],
               "rope128_fused_vs_unfused_compiled":
                   ms["rope_unfused_compiled"] / ms["rope128_fused"]}
        rows.append(row)
        print(json.dumps(row))

    # Bandwidth of other head dims, groups and the HND layout.
    for case, ref, new, b, l in (
            ("group 16 vs 8", base["plain_h64_p16"], shapes["plain_h64_g16_p16"], 64, 8192),
            ("HND vs NHD", base["plain_h32_p16"], base["plain_h32_p16_hnd"], 64, 4096),
            ("HND vs NHD B128", base["plain_h32_p16"], base["plain_h32_p16_hnd"], 128, 2048),
            ("D192 vs D128", base["plain_h32_p16"], shapes["plain_d192_h32_p16"], 64, 4096),
            ("D96 vs D128", base["plain_h32_p16"], shapes["plain_d96_h32_p16"], 64, 4096)):
        calls = {"ref": gc.run_kernel(ref, batch_of(ref, b, l))[2],
                 "new": gc.run_kernel(new, batch_of(new, b, l))[2]}
        ms = timed(calls)
        ref_tbps = kv_bytes(ref, b, l) / ms["ref"] / 1e9
        new_tbps = kv_bytes(new, b, l) / ms["new"] / 1e9
        row = {"case": case, "B": b, "L": l,
               "ref": f"Hq{ref.hq} Hkv{ref.hkv} D{ref.d}", "new": f"Hq{new.hq} Hkv{new.hkv} D{new.d}",
               "ref_TBps": ref_tbps, "new_TBps": new_tbps, "ratio": new_tbps / ref_tbps}
        c = cudnn_ms(new, b, l)
        if c:
            row["sdpa_cudnn_new_TBps"] = kv_bytes(new, b, l) / c / 1e9
        rows.append(row)
        print(json.dumps(row))
    if args.prefill and args.prefill_shapes:
        rows.append(prefill_variants(load(args.prefill, "prefill"),
                                     load(args.prefill_shapes, "prefill"), gen, timed))
        print(json.dumps(rows[-1]))
    with open(os.path.join(args.out, "coverage_bench.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(),
                   "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

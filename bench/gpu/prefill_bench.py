"""Prefill on the GPU machine (issue 7), side by side in one process:
FlashIR's tensor-core prefill kernels (paged KV, page 16, shuffled pages;
sm_90a cubin and the sm_80 PTX through the driver) next to PyTorch SDPA
(FlashAttention-2 and cuDNN backends) and FlexAttention (d 128) on
contiguous KV, bf16, Hq 32 / Hkv 8, d 64 / 128 / 256, causal and not; and
one page of 4096 keys per request (FlashIR's contiguous-KV figure). TFLOP/s
count 4 * B * Hq * Sq * Skv * D (half of it causal).

    python3 bench/gpu/prefill_bench.py --bundle build-gpu/bundle-prefill --out $OUT
"""

import argparse
import json
import re
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check as gc  # noqa: E402


def flops(b, hq, s, d, causal):
    return 4 * b * hq * s * s * d / (2 if causal else 1)


def time_flashir(kernels, func, qo_lens, kv_lens, seed, **timing):
    """{image label: (kernel, ms)} of FlashIR's `func` on one batch per image."""
    times = {}
    for label, ks in kernels.items():
        names = [n for n in ks if n.rsplit("_prefill_", 1)[0] == func]
        if not names:
            continue
        k = ks[names[0]]
        batch = gc.make_batch(k, qo_lens, kv_lens, torch.Generator().manual_seed(seed),
                              shared_pages=False)
        out, lse, call = gc.run_kernel(k, batch)
        times[label] = (k, gc.time_ms(call, **timing))
        del batch, out, lse, call
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--shapes", nargs="*", default=["4x4096", "1x16384"],
                    help="B x S of the d128 cases (query and key lengths equal)")
    ap.add_argument("--only", default=None,
                    help="regular expression: time only the kernels it matches (A/B runs)")
    ap.add_argument("--no-flex", action="store_true", help="skip FlexAttention")
    ap.add_argument("--bundle-b", nargs="*", default=[],
                    help="more bundles timed beside the first (A/B in one process; "
                    "their images labelled '... B', '... C', ...)")
    args = ap.parse_args()
    kernels = {}
    others = [(b, " " + chr(ord("B") + i)) for i, b in enumerate(args.bundle_b)]
    for bundle, suffix in [(args.bundle, "")] + others:
        manifest = json.load(open(os.path.join(bundle, "manifest.json")))
        for t in manifest["targets"]:
            if t["chip"] == "sm_90a" and "cubin" in t:
                chip, path, label = t["chip"], os.path.join(bundle, t["cubin"]), "sm_90a cubin"
            elif t["chip"] == "sm_80":
                chip, path, label = t["chip"], os.path.join(bundle, t["ptx"]), "sm_80 PTX"
            else:
                continue
            module = gc.Module(open(path, "rb").read())
            kernels[label + suffix] = gc.load_kernels(manifest, module, chip)
    rows = []
    from torch.nn.attention import SDPBackend
    # (B x S, causal, head dim, FlashIR function, with FlexAttention): issue
    # 7's shapes; page 4096 holds a request's 4096 keys in one page (the
    # contiguous-KV figure for the paged one next to it).
    cases = [(shape, causal, 128, ("causal" if causal else "plain") + "_d128_g4_p16_bf16", True)
             for shape in args.shapes for causal in (False, True)]
    cases += [("4x4096", causal, d, ("causal" if causal else "plain") + f"_d{d}_g4_p16_bf16", False)
              for d in (64, 256) for causal in (False, True)]
    cases += [("4x4096", False, 128, "plain_d128_g4_p4096_bf16", False),
              # Page 1 (the wgmma kernel's cp.async gather; the mma.sync
              # kernel's row copies), next to page 16 above.
              ("4x4096", False, 128, "plain_d128_g4_p1_bf16", False),
              ("4x4096", True, 128, "causal_d128_g4_p1_bf16", False),
              # 16 query rows per warp (Q in registers), the earlier layout.
              ("4x4096", False, 128, "plain_d128_g4_p16_bf16_q64", False),
              # attn-select-tiles' previous sm_80 choice at d 256 (64-key
              # tiles), 64 rows on 4 warps; 64-key tiles at d 64.
              ("4x4096", False, 256, "plain_d256_g4_p16_bf16_q128", False),
              ("4x4096", False, 256, "plain_d256_g4_p16_bf16_q64", False),
              # the same with Q in shared memory (tiles' q_shared) and 32-key
              # tiles; 64 rows on 4 warps with Q in shared memory.
              ("4x4096", False, 256, "plain_d256_g4_p16_bf16_qsmem", False),
              ("4x4096", False, 256, "plain_d256_g4_p16_bf16_qsmem64", False),
              ("4x4096", False, 64, "plain_d64_g4_p16_bf16_kv64", False),
              # One stage: one K and one V slot (build-gpu/bundle-prefill-s1):
              # d256 as FlashAttention-2 runs it on the H200 (64 rows on 4
              # warps, Q in shared memory, 64-key tiles, 101 KB), 128 rows
              # on 8 warps (135 KB), d128.
              ("4x4096", False, 256, "plain_d256_g4_p16_bf16_s1", False),
              ("4x4096", True, 256, "causal_d256_g4_p16_bf16_s1", False),
              ("4x4096", False, 256, "plain_d256_g4_p16_bf16_q128s1", False),
              ("4x4096", False, 128, "plain_d128_g4_p16_bf16_s1", False),
              ("4x4096", True, 128, "causal_d128_g4_p16_bf16_s1", False),
              # attn-select-tiles' sm_90a d256 tile (build-gpu/bundle-prefill-sm90a).
              ("4x4096", False, 256, "plain_d256_g4_p16_bf16_sm90", False),
              ("4x4096", True, 256, "causal_d256_g4_p16_bf16_sm90", False),
              # d256 over contiguous KV (one 4096-key page per request), the
              # sm_80 and the sm_90a tile.
              ("4x4096", False, 256, "plain_d256_g4_p4096_bf16", False),
              ("4x4096", True, 256, "causal_d256_g4_p4096_bf16", False),
              ("4x4096", False, 256, "plain_d256_g4_p4096_bf16_sm90", False),
              ("4x4096", True, 256, "causal_d256_g4_p4096_bf16_sm90", False)]
    if args.only:
        cases = [c for c in cases if re.search(args.only, c[3])]
        # Other functions of the bundle it matches (A/B probe bundles, the
        # hook variants): B4 S4096, head dim and mask from the name (causal_*
        # counts half; other masks are timed as if they hid nothing).
        listed = {c[3] for c in cases}
        for func in sorted({k.rsplit("_", 2)[0] for k in kernels[next(iter(kernels))]}):
            m = re.match(r"([a-z]+)_\w*?d(\d+)_g\d+_(p\d+|ragged)_b?f16(_\w+)?$", func)
            if m and func not in listed and re.search(args.only, func):
                cases.append(("4x4096", m.group(1) == "causal", int(m.group(2)), func, False))
    for shape, causal, d, func, with_flex in cases:
        with_flex = with_flex and not args.no_flex
        b, s = (int(x) for x in shape.split("x"))
        row = {"case": f"B{b} S{s} d{d} Hq32/Hkv8", "causal": causal, "kernel": func}
        k = None
        for label, (k, ms) in time_flashir(kernels, func, [s] * b, [s] * b, 3, reps=10,
                                           warmup=2, inner=2).items():
            row[f"flashir_{label}_ms"] = ms
            row[f"flashir_{label}_TFLOPs"] = flops(b, k.hq, s, k.d, causal) / ms / 1e9
        if k is None:
            continue
        q = torch.randn(b, k.hq, s, k.d, device="cuda", dtype=torch.bfloat16)
        kc = torch.randn(b, k.hkv, s, k.d, device="cuda", dtype=torch.bfloat16)
        vc = torch.randn_like(kc)
        for peer, backend in (("sdpa_fa2", SDPBackend.FLASH_ATTENTION),
                              ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                ms = gc.sdpa_ms(backend, q, kc, vc, is_causal=causal, reps=10, warmup=2,
                                inner=2)
                row[f"{peer}_ms"] = ms
                row[f"{peer}_TFLOPs"] = flops(b, k.hq, s, k.d, causal) / ms / 1e9
            except Exception as e:  # the backend refuses GQA or the shape
                row[f"{peer}_error"] = str(e)[:200]
        if with_flex:
            try:
                from torch.nn.attention.flex_attention import create_block_mask, flex_attention
                mask = None
                if causal:
                    mask = create_block_mask(lambda bi, h, qi, kv: kv <= qi, None, None, s, s,
                                             device="cuda")
                flex = torch.compile(flex_attention)
                fn = lambda: flex(q, kc, vc, block_mask=mask, enable_gqa=True)
                fn()
                ms = gc.time_ms(fn, reps=10, warmup=2, inner=2)
                row["flex_ms"] = ms
                row["flex_TFLOPs"] = flops(b, k.hq, s, k.d, causal) / ms / 1e9
            except Exception as e:
                row["flex_error"] = str(e)[:200]
        for label in kernels:
            if "sdpa_fa2_ms" in row and f"flashir_{label}_ms" in row:
                row[f"flashir_{label}_over_fa2"] = row["sdpa_fa2_ms"] / row[f"flashir_{label}_ms"]
            if "sdpa_cudnn_ms" in row and f"flashir_{label}_ms" in row:
                row[f"flashir_{label}_over_cudnn"] = row["sdpa_cudnn_ms"] / row[f"flashir_{label}_ms"]
        rows.append(row)
        print(json.dumps(row))
        del q, kc, vc
    # Short queries (speculative decoding, chunked prefill tails): 8 rows per
    # request against 4096 keys, causal, per-head CTAs vs fused head groups
    # (a CTA's 64 rows: 16 tokens x 4 heads, so 32 of them are real here
    # instead of 8).
    for func in ("causal_d128_g4_p16_bf16", "causal_d128_g4_p16_bf16_fused"):
        if args.only and not re.search(args.only, func):
            continue
        b, lq, lkv = 64, 8, 4096
        row = {"case": f"B{b} qo {lq} kv {lkv} d128 causal", "kernel": func}
        for label, (k, ms) in time_flashir(kernels, func, [lq] * b, [lkv] * b, 4,
                                           reps=20).items():
            row[f"flashir_{label}_ms"] = ms
            row[f"flashir_{label}_kv_TBps"] = b * lkv * k.hkv * k.d * 4 / ms / 1e9
        rows.append(row)
        print(json.dumps(row))
    gc.write_rows(args.out, "prefill_bench.json", rows)


if __name__ == "__main__":
    main()

"""Skewed-batch decode (issue 6), side by side in one process (GPU machine):

- FlashIR: the Python package's plan/run over a split-KV bundle (paged KV,
  page 16; plan() once, run() timed),
- SDPA with the cuDNN backend on KV padded to the longest request plus a
  boolean mask,
- FlexAttention (torch.compile) on the same padded KV with a length mask
  (its block mask skips the padding),
- SDPA-cuDNN on contiguous KV of equal bytes (the batch's requests, each
  given the mean length; issue 6's bandwidth reference),

for 1 x 32768 + 63 x 512 and B16 L32768 (bf16, Hq 32 / Hkv 8, d 128).
Bandwidth counts the real KV bytes. Outputs are compared with SDPA's math
backend in float32 on the padded KV.

    python3 bench/gpu/skewed_bench.py --bundle build-gpu/bundle-split --out $OUT
"""

import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import flashir  # noqa: E402
import gpu_check  # noqa: E402

HQ, HKV, D, PAGE = 32, 8, 128, 16


def time_ms(fn):
    return gpu_check.time_ms(fn, reps=30, warmup=5)


def paged_decode_batch(lens, gen):
    """One query row per request over shuffled pages of a fresh pool: host
    int32 qo / indptr / indices / last, device pools and queries."""
    dev = "cuda"
    pages_per = [(n + PAGE - 1) // PAGE for n in lens]
    num_pages = sum(pages_per) + 8
    perm = torch.randperm(num_pages, generator=gen).tolist()
    indptr, indices, last = [0], [], []
    for n, p in zip(lens, pages_per):
        indices += perm[len(indices):len(indices) + p]
        indptr.append(len(indices))
        last.append(n - (p - 1) * PAGE)
    i32 = lambda x: torch.tensor(x, dtype=torch.int32)
    kp = torch.randn(num_pages, PAGE, HKV, D, generator=gen).to(dev, torch.bfloat16)
    vp = torch.randn(num_pages, PAGE, HKV, D, generator=gen).to(dev, torch.bfloat16)
    q = torch.randn(len(lens), HQ, D, generator=gen).to(dev, torch.bfloat16)
    return dict(qo=i32(list(range(len(lens) + 1))), indptr=i32(indptr), indices=i32(indices),
                last=i32(last), num_pages=num_pages, kp=kp, vp=vp, q=q,
                indptr_l=indptr, indices_l=indices)


def case(name, lens, wrapper, gen):
    dev = "cuda"
    batch = paged_decode_batch(lens, gen)
    kp, vp, q, num_pages = batch["kp"], batch["vp"], batch["q"], batch["num_pages"]
    indptr, indices = batch["indptr_l"], batch["indices_l"]
    wrapper.plan(batch["qo"], batch["indptr"], batch["indices"], batch["last"], num_pages)
    indices_gpu = batch["indices"].to(dev)
    out, _ = wrapper.run(q, (kp, vp), indices_gpu)
    flashir_ms = time_ms(lambda: wrapper.run(q, (kp, vp), indices_gpu))

    # Padded contiguous KV [B, Hkv, Lmax, D] with the same keys.
    lmax, b = max(lens), len(lens)
    kc = torch.zeros(b, HKV, lmax, D, device=dev, dtype=torch.bfloat16)
    vc = torch.zeros_like(kc)
    for r, n in enumerate(lens):
        pages = torch.tensor(indices[indptr[r]:indptr[r + 1]], device=dev).long()
        kc[r, :, :n] = kp[pages].reshape(-1, HKV, D)[:n].transpose(0, 1)
        vc[r, :, :n] = vp[pages].reshape(-1, HKV, D)[:n].transpose(0, 1)
    lens_t = torch.tensor(lens, device=dev)
    keep = (torch.arange(lmax, device=dev)[None, :] < lens_t[:, None])[:, None, None, :]
    q4 = q[:, :, None, :]
    real_bytes = sum(lens) * HKV * D * 2 * 2
    row = {"case": name, "B": b, "real_kv_bytes": real_bytes,
           "padded_kv_bytes": b * lmax * HKV * D * 2 * 2,
           "flashir_planned_ms": flashir_ms, "flashir_TBps": real_bytes / flashir_ms / 1e9}

    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        ref = F.scaled_dot_product_attention(q4.float(), kc.float(), vc.float(), attn_mask=keep,
                                             enable_gqa=True)[:, :, 0]
    row["flashir_rel_err"] = ((out.float() - ref).norm() / ref.norm()).item()
    try:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            fn = lambda: F.scaled_dot_product_attention(q4, kc, vc, attn_mask=keep, enable_gqa=True)
            o = fn()
            ms = time_ms(fn)
        row["sdpa_cudnn_masked_ms"] = ms
        row["sdpa_cudnn_masked_real_TBps"] = real_bytes / ms / 1e9
        row["sdpa_cudnn_rel_err"] = ((o[:, :, 0].float() - ref).norm() / ref.norm()).item()
    except Exception as e:  # the backend refuses the mask or shape
        row["sdpa_cudnn_error"] = str(e)[:300]
    # Contiguous KV of equal bytes, no mask: b requests of the mean length.
    mean = sum(lens) // b
    try:
        ke = torch.randn(b, HKV, mean, D, device=dev, dtype=torch.bfloat16)
        ve = torch.randn_like(ke)
        ms = gpu_check.sdpa_ms(SDPBackend.CUDNN_ATTENTION, q4, ke, ve, reps=30, warmup=5)
        equal_bytes = b * mean * HKV * D * 2 * 2
        row["sdpa_cudnn_equal_bytes_ms"] = ms
        row["sdpa_cudnn_equal_bytes_TBps"] = equal_bytes / ms / 1e9
        row["flashir_over_cudnn_equal_bytes"] = row["flashir_TBps"] / (equal_bytes / ms / 1e9)
        del ke, ve
    except Exception as e:
        row["sdpa_cudnn_equal_bytes_error"] = str(e)[:300]
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        lens_dev = lens_t

        def mask_mod(bi, h, qi, kv):
            return kv < lens_dev[bi]
        block_mask = create_block_mask(mask_mod, b, None, 1, lmax, device=dev)
        flex = torch.compile(flex_attention)
        fn = lambda: flex(q4, kc, vc, block_mask=block_mask, enable_gqa=True)
        o = fn()
        ms = time_ms(fn)
        row["flex_ms"] = ms
        row["flex_real_TBps"] = real_bytes / ms / 1e9
        row["flex_rel_err"] = ((o[:, :, 0].float() - ref).norm() / ref.norm()).item()
    except Exception as e:
        row["flex_error"] = str(e)[:300]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True, help="split-KV bundle")
    ap.add_argument("--kernel", default="plain_h32_p16")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    wrapper = flashir.SplitKVRunner(args.bundle, args.kernel, max_requests=64)
    gen = torch.Generator().manual_seed(7)
    rows = []
    for name, lens in (("1x32768 + 63x512", [32768] + [512] * 63), ("B16 L32768", [32768] * 16)):
        row = case(name, lens, wrapper, gen)
        rows.append(row)
        print(json.dumps(row))
    gpu_check.write_rows(args.out, "skewed.json", rows)


if __name__ == "__main__":
    main()

"""Shared-prefix (cascade) decoding on the GPU machine (issue 7, item 3):
B requests decode one token each over a prefix of P tokens they all share
(the same page ids) plus their own suffix of S tokens; bf16, Hq 32 / Hkv 8,
d 128, page 16.

- not composed: the decode kernel over each request's whole page list (the
  prefix is read once per request);
- composed: the prefix part as multi-row attention with the tensor-core
  prefill kernel with fused head groups (all B query rows against the
  prefix, cut into C chunks that run as C "requests" of B rows each, so the
  grid fills the GPU), the suffix part with the decode kernel, then one
  merge of the C + 1 states (eq. 6, PyTorch ops: a weighted sum);
- policy: the faster of the two (what a runtime would choose per batch).

Both are timed end to end on the GPU (every kernel and the merge); the
composed output is compared with the float64 reference and with the
uncomposed one.

    python3 bench/gpu/shared_prefix_bench.py --decode-bundle build-gpu/bundle \\
        --prefill-bundle build-gpu/bundle-prefill --out $OUT
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check as gc  # noqa: E402

PAGE = 16


def load(bundle, func):
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    target = [t for t in manifest["targets"] if t["chip"] == "sm_90a"][0]
    module = gc.Module(open(os.path.join(bundle, target["cubin"]), "rb").read())
    kernels = gc.load_kernels(manifest, module, "sm_90a")
    return [k for n, k in kernels.items() if n.rsplit("_", 2)[0] == func][0]


def batch_of(k, q, kp, vp, qo_lens, page_lists, last_lens):
    """A gpu_check batch over existing pools and queries."""
    i32 = lambda x: torch.tensor(x if x else [0], dtype=torch.int32, device="cuda")
    indptr, indices = [0], []
    for pages in page_lists:
        indices += pages
        indptr.append(len(indices))
    qo = [0]
    for n in qo_lens:
        qo.append(qo[-1] + n)
    kv_lens = [(len(p) - 1) * PAGE + last if p else 0 for p, last in zip(page_lists, last_lens)]
    return dict(q=q, qo=i32(qo), kp=kp, vp=vp, indptr=i32(indptr), indices=i32(indices),
                last=i32(last_lens), qo_lens=qo_lens, kv_lens=kv_lens, indptr_l=indptr,
                indices_l=indices, params=[])


def merge(o, lse):
    """States o [n, B, H, D] / lse [n, B, H] (natural log) merged along n
    (eq. 6): one weighted sum over the n states of each (row, head)."""
    m = lse.amax(dim=0)
    m_safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    w = torch.exp(lse - m_safe)
    total = w.sum(dim=0)
    v = (o.float() * w[..., None]).sum(dim=0) / total.clamp_min(1e-30)[..., None]
    return v, m_safe + torch.log(total)


def case(dk, pk, b, prefix, suffix, chunks, gen):
    hq, hkv, d = dk.hq, dk.hkv, dk.d
    prefix_pages, suffix_pages = prefix // PAGE, suffix // PAGE
    num_pages = prefix_pages + b * suffix_pages
    shape = (num_pages, PAGE, hkv, d)
    kp = torch.randn(shape, generator=gen).to("cuda", torch.bfloat16)
    vp = torch.randn(shape, generator=gen).to("cuda", torch.bfloat16)
    q = torch.randn(b, hq, d, generator=gen).to("cuda", torch.bfloat16)
    shared = list(range(prefix_pages))
    own = [list(range(prefix_pages + r * suffix_pages, prefix_pages + (r + 1) * suffix_pages))
           for r in range(b)]
    # Not composed: one decode over prefix + suffix per request.
    full = batch_of(dk, q, kp, vp, [1] * b, [shared + o for o in own], [PAGE] * b)
    out_full, lse_full, call_full = gc.run_kernel(dk, full)
    call_full()
    # Composed: the prefix in `chunks` pieces, each all B rows (prefill
    # kernel); the suffixes (decode kernel); the merge.
    per = prefix_pages // chunks
    q_rep = q.repeat(chunks, 1, 1)
    pre = batch_of(pk, q_rep, kp, vp, [b] * chunks,
                   [shared[c * per:(c + 1) * per] for c in range(chunks)], [PAGE] * chunks)
    out_pre, lse_pre, call_pre = gc.run_kernel(pk, pre)
    suf = batch_of(dk, q, kp, vp, [1] * b, own, [PAGE] * b)
    out_suf, lse_suf, call_suf = gc.run_kernel(dk, suf)

    # The chunk states and the suffix state side by side, so the merge reads
    # them in place.
    o_all = torch.empty(chunks + 1, b, hq, d, device="cuda", dtype=out_pre.dtype)
    l_all = torch.empty(chunks + 1, b, hq, device="cuda", dtype=torch.float32)

    def composed():
        call_pre()
        call_suf()
        o_all[:chunks].copy_(out_pre.view(chunks, b, hq, d))
        o_all[chunks].copy_(out_suf)
        l_all[:chunks].copy_(lse_pre.view(chunks, b, hq))
        l_all[chunks].copy_(lse_suf)
        return merge(o_all, l_all)
    out_c, lse_c = composed()
    torch.cuda.synchronize()
    ref_o, ref_l = gc.reference(dk, full)
    rel = lambda x: ((x.double() - ref_o).norm() / ref_o.norm()).item()
    row = {"case": f"B{b} prefix {prefix} suffix {suffix}", "chunks": chunks,
           "composed_rel_err": rel(out_c), "not_composed_rel_err": rel(out_full),
           "composed_vs_not_rel": ((out_c - out_full.float()).norm() / out_full.float().norm()).item(),
           "composed_lse_err": (lse_c.double() - ref_l).abs().max().item()}
    row["not_composed_ms"] = gc.time_ms(call_full, reps=20)
    row["composed_ms"] = gc.time_ms(composed, reps=20)
    row["prefix_part_ms"] = gc.time_ms(call_pre, reps=20)
    row["speedup"] = row["not_composed_ms"] / row["composed_ms"]
    # What a runtime would run: composition where it is faster (the prefix
    # is read once instead of B times, against two more launches + a merge).
    row["policy"] = "composed" if row["composed_ms"] < row["not_composed_ms"] else "not composed"
    row["policy_ms"] = min(row["composed_ms"], row["not_composed_ms"])
    row["ok"] = row["composed_rel_err"] <= 1e-2 and not math.isnan(row["composed_rel_err"])
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decode-bundle", required=True)
    ap.add_argument("--prefill-bundle", required=True)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    dk = load(args.decode_bundle, "plain_h32_p16")
    # The prefix part: fused head groups (a CTA's 128 rows are 32 queries x
    # the 4 query heads of one KV head), so each KV head's keys are read by
    # B / 32 CTAs instead of B / 128 x 4.
    pk = load(args.prefill_bundle, "plain_d128_g4_p16_bf16_fused")
    gen = torch.Generator().manual_seed(5)
    rows = []
    # Chunks: B64 -> 16 chunks x 2 q tiles x 8 KV heads = 256 CTAs, one wave
    # of the H200's 132 SMs x 2.
    for b, prefix, suffix, chunks in ((64, 32768, 128, 16), (16, 1024, 128, 4)):
        row = case(dk, pk, b, prefix, suffix, chunks, gen)
        rows.append(row)
        print(json.dumps(row))
    gc.write_rows(args.out, "shared_prefix.json", rows)
    sys.exit(0 if all(r["ok"] for r in rows) else 1)


if __name__ == "__main__":
    main()

"""Split-KV decode through the runtime (flashir.SplitKVRunner) with a decode
bundle whose kernel merges in the kernel (flashir-bundle --fused-merge)
against the same kernel followed by the merge kernel (issue 25): bf16,
Hq 32 / Hkv 8, d 128, page 16, B requests of N keys (shuffled pages).
Checks each output against a float64 reference (relative error of out,
max error of lse), then times run() (median of back-to-back steps) and a
CUDA graph of it, both bundles in one process.

    python3 bench/gpu/probes/fused_merge_split.py --base build-gpu/fm-base-split \\
        --fused build-gpu/fm-split --out $OUT
"""
import argparse
import json
import math
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "python"))
import gpu_check as gc  # noqa: E402
import flashir  # noqa: E402

PAGE, HQ, HKV, D = 16, 32, 8, 128


def batch(b, n, gen):
    pages = (n + PAGE - 1) // PAGE
    pool = b * pages + 7
    perm = torch.randperm(pool, generator=gen)
    indices = perm[:b * pages].to(torch.int32)
    indptr = torch.arange(0, b * pages + 1, pages, dtype=torch.int32)
    last = torch.full((b,), n - (pages - 1) * PAGE, dtype=torch.int32)
    k = torch.randn(pool, PAGE, HKV, D, generator=gen).to("cuda", torch.bfloat16)
    v = torch.randn(pool, PAGE, HKV, D, generator=gen).to("cuda", torch.bfloat16)
    q = torch.randn(b, HQ, D, generator=gen).to("cuda", torch.bfloat16)
    return dict(q=q, k=k, v=v, indptr=indptr, indices=indices, last=last, pool=pool,
                qo=torch.arange(b + 1, dtype=torch.int32), n=n)


def reference(x):
    b = x["q"].shape[0]
    ids = x["indices"].long().cuda().view(b, -1)
    kk = x["k"][ids].reshape(b, -1, HKV, D)[:, :x["n"]].double()
    vv = x["v"][ids].reshape(b, -1, HKV, D)[:, :x["n"]].double()
    kk = kk.repeat_interleave(HQ // HKV, 2)
    vv = vv.repeat_interleave(HQ // HKV, 2)
    s = torch.einsum("bhd,bnhd->bhn", x["q"].double(), kk) / math.sqrt(D)
    lse = torch.logsumexp(s, dim=2)
    return torch.einsum("bhn,bnhd->bhd", torch.softmax(s, dim=2), vv), lse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="split-KV decode bundle (merge kernel)")
    ap.add_argument("--fused", required=True, help="the same built with --fused-merge")
    ap.add_argument("--shapes", nargs="*", default=["1x32768", "4x32768", "16x8192",
                                                    "64x4096", "32x1000"])
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(11)
    rows = []
    for shape in args.shapes:
        b, n = (int(t) for t in shape.split("x"))
        x = batch(b, n, gen)
        ref_o, ref_l = reference(x)
        row = {"batch": b, "keys": n}
        for label, path in (("base", args.base), ("fused", args.fused)):
            w = flashir.SplitKVRunner(path, "plain_h32_p16", max_requests=b)
            w.plan(x["qo"], x["indptr"], x["indices"], x["last"], x["pool"])
            ids = x["indices"].cuda()
            fn = lambda: w.run(x["q"], (x["k"], x["v"]), ids)
            out, lse = fn()
            torch.cuda.synchronize()
            row[f"{label}_rel_err"] = ((out.double() - ref_o).norm() / ref_o.norm()).item()
            row[f"{label}_lse_err"] = (lse.double() - ref_l).abs().max().item()
            row[f"{label}_us"] = gc.time_ms(fn, reps=50) * 1000
            graph = torch.cuda.CUDAGraph()
            gfn = lambda: w.run(x["q"], (x["k"], x["v"]), ids, capacity_grids=True)
            gfn()
            torch.cuda.synchronize()
            with torch.cuda.graph(graph):
                out_g, _ = gfn()
            for _ in range(3):
                graph.replay()
            torch.cuda.synchronize()
            row[f"{label}_graph_rel_err"] = (
                (out_g.double() - ref_o).norm() / ref_o.norm()).item()
            row[f"{label}_graph_us"] = gc.time_ms(graph.replay, reps=50) * 1000
        row["ok"] = all(row[f"{k}_rel_err"] <= 1e-2 and row[f"{k}_graph_rel_err"] <= 1e-2
                        and row[f"{k}_lse_err"] <= 1e-2 for k in ("base", "fused"))
        print(json.dumps(row), flush=True)
        rows.append(row)
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows},
              open(os.path.join(args.out, "fused_merge_split.json"), "w"), indent=1)
    sys.exit(0 if all(r["ok"] for r in rows) else 1)


if __name__ == "__main__":
    main()

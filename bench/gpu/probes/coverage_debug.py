"""Probe for the coverage run of 2026-12-02: which decode kernels fail at
benchmark sizes (an illegal address at B64 L4096), and how far the
elementwise failures of the sigmoid / RoPE d96 checks are from the bound.

    python3 bench/gpu/probes/coverage_debug.py --shapes build-gpu/bundle-shapes [--kernels ...]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import gpu_check as gc  # noqa: E402
from coverage_bench import load  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--kernels", nargs="*", default=["plain_d96_h32_p16", "plain_d192_h32_p16",
                                                     "plain_h64_g16_p16"])
    ap.add_argument("--sizes", nargs="*", default=["8x1024", "64x1024", "64x4096"])
    ap.add_argument("--errors", action="store_true", help="elementwise error report")
    args = ap.parse_args()
    kernels = load(args.shapes)
    if args.errors:
        for name, qo, kv, seed in (("rope_d96_g16_p16_bf16", [2, 1, 3], [40, 9, 2], 4),
                                   ("sigmoid_d128_g4_p16_bf16", [1, 1, 1, 1], [1, 16, 17, 1000], 1),
                                   ("sigmoid_d128_g4_p16_bf16", [2, 1, 3], [40, 9, 2], 4)):
            k = kernels[name]
            gen = torch.Generator().manual_seed(seed)
            batch = gc.make_batch(k, qo, kv, gen, nan_unowned=True)
            out, lse, call = gc.run_kernel(k, batch)
            call()
            torch.cuda.synchronize()
            ref_o, ref_l = gc.reference(k, batch)
            diff = (out.double() - ref_o).abs()
            tol = 2.0 ** -7
            excess = diff - (tol + tol * batch["ref_mag"])
            idx = torch.nonzero(excess > 0)
            print(json.dumps({"kernel": name, "qo": qo, "kv": kv, "max_abs": diff.max().item(),
                              "ref_max": ref_o.abs().max().item(), "n_over": len(idx),
                              "first_over": idx[:5].tolist(),
                              "their_ref": [ref_o[tuple(i)].item() for i in idx[:5]],
                              "their_out": [out[tuple(i)].item() for i in idx[:5]]}))
    for name in args.kernels:
        for size in args.sizes:
            b, l = map(int, size.split("x"))
            r = gc.check(kernels[name], [1] * b, [l] * b, 3)
            print(json.dumps({"kernel": name, "B": b, "L": l, **r}), flush=True)


if __name__ == "__main__":
    main()

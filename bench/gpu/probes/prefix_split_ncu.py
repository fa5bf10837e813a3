"""Nsight Compute target (issue 25 probe): the shared-prefix benchmark's
prefix once as the split-KV prefill kernel (chunk states for the merge) and
once as the unsplit kernel over the same chunks as requests, B64 prefix L,
C chunks; each launched twice, so `ncu -k regex:fused_prefill
--launch-skip 2 --launch-count 2` profiles one warm launch of each (split
first).

    ncu ... python3 bench/gpu/probes/prefix_split_ncu.py \\
        --decode-bundle build-gpu/cascade-decode \\
        --prefill-bundle build-gpu/cascade-prefill-wgmma
"""
import argparse
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
import shared_prefix_bench as spb  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decode-bundle", required=True)
    ap.add_argument("--prefill-bundle", required=True)
    ap.add_argument("--length", type=int, default=32768)
    ap.add_argument("--chunks", type=int, default=8)
    args = ap.parse_args()
    dk = spb.load(args.decode_bundle, "plain_h32_p16")
    sk = spb.load(args.decode_bundle + "-split-w1", "plain_h32_p16")
    spk = spb.load(args.prefill_bundle + "-split", "plain_d128_g4_p16_bf16_fused")
    pk = spb.load(args.prefill_bundle, "plain_d128_g4_p16_bf16_fused")
    gen = torch.Generator().manual_seed(7)
    b, L, cp = 64, args.length, args.chunks
    kp, vp, q, shared, own, _ = spb.inputs(dk, b, L, 128, gen)
    _, _, call = spb.cascade(sk, spk, q, kp, vp, shared, own, cp, L, [128] * b)
    _, _, call_pre, _ = spb.unsplit_prefix(pk, q, kp, vp, shared, cp)
    for _ in range(2):
        call.prefix()
        call_pre()
        torch.cuda.synchronize()
    print("done", flush=True)


if __name__ == "__main__":
    main()

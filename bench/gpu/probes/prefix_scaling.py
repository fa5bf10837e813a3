"""How the shared-prefix kernel's time scales (issue 7 probe): B64 decode
rows over a shared prefix of L keys in C chunks, the split-KV prefill kernel
(f32 chunk states) and the unsplit one with the C chunks as C requests (bf16
outputs, no split bookkeeping) timed alone for several L: the intercept of
time against L is the per-CTA fixed cost (launch, prologue, epilogue, tail),
the slope the cost per key tile. Also the decode merge kernel alone.

    python3 bench/gpu/probes/prefix_scaling.py --decode-bundle build-gpu/bundle \\
        --prefill-bundle build-gpu/bundle-prefill --out $OUT

With --ncu-target it times nothing: per (chunks, L) it launches the split
and the unsplit prefix kernels twice each, alternately (split first), so
`ncu -k regex:fused_prefill --launch-skip 2 --launch-count 2` profiles one
warm launch of each.
"""
import argparse
import json
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
import gpu_check as gc  # noqa: E402
import shared_prefix_bench as spb  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decode-bundle", required=True)
    ap.add_argument("--prefill-bundle", required=True)
    ap.add_argument("--lengths", type=int, nargs="*", default=[8192, 16384, 32768, 65536])
    ap.add_argument("--chunks", type=int, nargs="*", default=[16])
    ap.add_argument("--out", default=".")
    ap.add_argument("--ncu-target", action="store_true",
                    help="only launch the two prefix kernels, for Nsight Compute")
    args = ap.parse_args()
    dk = spb.load(args.decode_bundle, "plain_h32_p16")
    sk = spb.load(args.decode_bundle + "-split-w1", "plain_h32_p16")
    spk = spb.load(args.prefill_bundle + "-split", "plain_d128_g4_p16_bf16_fused")
    pk = spb.load(args.prefill_bundle, "plain_d128_g4_p16_bf16_fused")
    gen = torch.Generator().manual_seed(7)
    rows = []
    b = 64
    for cp in args.chunks:
        for L in args.lengths:
            kp, vp, q, shared, own, _ = spb.inputs(dk, b, L, 128, gen)
            out, lse, call = spb.cascade(sk, spk, q, kp, vp, shared, own, cp, L, [128] * b)
            _, _, call_pre, pre = spb.unsplit_prefix(pk, q, kp, vp, shared, cp)
            if args.ncu_target:
                for _ in range(2):
                    call.prefix()
                    call_pre()
                    torch.cuda.synchronize()
                del pre, call_pre, call, kp, vp
                continue
            call()
            torch.cuda.synchronize()
            flop = 4.0 * b * dk.hq * L * dk.d
            r = {"L": L, "chunks": cp, "tiles_per_cta": L // cp // 64,
                 "split_prefix_ms": gc.time_ms(call.prefix, reps=30),
                 "unsplit_prefix_ms": gc.time_ms(call_pre, reps=30),
                 "merge_ms": gc.time_ms(call.merge, reps=30),
                 "suffix_ms": gc.time_ms(call.suffix, reps=30)}
            r["split_tflops"] = flop / r["split_prefix_ms"] / 1e9
            r["unsplit_tflops"] = flop / r["unsplit_prefix_ms"] / 1e9
            print(json.dumps(r), flush=True)
            rows.append(r)
            del pre, call_pre, call, kp, vp
    if args.ncu_target:
        return
    with open(os.path.join(args.out, "prefix_scaling.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

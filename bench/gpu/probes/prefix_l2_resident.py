"""How much of the cascade's prefix kernel is its keys coming from DRAM
(issue 25 probe): the split prefill kernel over B64 one-row requests'
shared prefix with CTAs of `--keys-per-cta` keys each (the runtime's plan
for prefix 32768: 8 chunks of 4096), timed back to back over prefixes of
32768, 16384 and 8192 keys in 8, 4 and 2 chunks: the same grid of equal
CTAs, but the shorter prefixes' keys (67 and 34 MB) stay in the 50 MB L2
between launches.

    python3 bench/gpu/probes/prefix_l2_resident.py --decode-bundle build-gpu/cascade-decode \\
        --prefill-split-bundle build-gpu/cpR-split
"""
import argparse
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
import gpu_check as gc  # noqa: E402
import shared_prefix_bench as spb  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode-bundle", required=True,
                    help="decode bundle dir; its -split-w1 sibling runs the suffix")
    ap.add_argument("--prefill-split-bundle", required=True)
    ap.add_argument("--keys-per-cta", type=int, default=4096)
    args = ap.parse_args()
    dk = spb.load(args.decode_bundle, "plain_h32_p16")
    sk = spb.load(args.decode_bundle + "-split-w1", "plain_h32_p16")
    spk = spb.load(args.prefill_split_bundle, "plain_d128_g4_p16_bf16_fused")
    print(torch.cuda.get_device_name())
    for prefix in (32768, 16384, 8192):
        chunks = prefix // args.keys_per_cta
        gen = torch.Generator().manual_seed(5)
        kp, vp, q, shared, own, _ = spb.inputs(dk, 64, prefix, 128, gen)
        _, _, call = spb.cascade(sk, spk, q, kp, vp, shared, own, chunks, prefix, [128] * 64,
                                 overlap="chain", suffix_chunks=2)
        t = gc.time_ms(call.prefix, reps=30) * 1000
        mb = kp.numel() * kp.element_size() * 2 / 1e6
        print(f"prefix {prefix} chunks {chunks}: {t:.2f} us (pools {mb:.0f} MB)", flush=True)
        del kp, vp, q, call


if __name__ == "__main__":
    main()

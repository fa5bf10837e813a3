"""Where the packed-bit custom mask's prefill time goes, next to causal:
the custom_mask kernel (prefill_shapes.mlir) with the causal mask as bits,
no visible key (the tile classification alone: every tile skipped), every
key visible (no tile skipped, none masked), random bits; the causal and
plain kernels (prefill_kernels.mlir) of the same tiles. Round-robin medians.

  python3 bench/gpu/probes/mask_prologue.py --prefill B --prefill-shapes B [--only NAME]

--only NAME launches that one case a few times (for ncu) instead of timing.
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gpu_check as gc  # noqa: E402
from coverage_bench import load  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefill", required=True)
    ap.add_argument("--prefill-shapes", required=True)
    ap.add_argument("--shape", default="4x4096", help="B x S")
    ap.add_argument("--only", default=None)
    ap.add_argument("--out", default=None, help="JSON file of the times")
    args = ap.parse_args()
    b, s = (int(x) for x in args.shape.split("x"))
    base = load(args.prefill, "prefill")
    shapes = load(args.prefill_shapes, "prefill")
    mask = shapes["custom_mask_d128_g4_p16_bf16"]
    cases = {"causal": (base["causal_d128_g4_p16_bf16"], "mixed"),
             "plain": (base["plain_d128_g4_p16_bf16"], "mixed"),
             "bits_causal": (mask, "causal"),
             "bits_none": (mask, "none"),
             "bits_all": (mask, "all"),
             "bits_random": (mask, "random")}
    if args.only:
        cases = {args.only: cases[args.only]}
    gen = torch.Generator().manual_seed(5)
    batches, calls = [], {}
    for name, (k, pattern) in cases.items():
        batches.append(gc.make_batch(k, [s] * b, [s] * b, gen, shared_pages=False,
                                     mask_pattern=pattern))
        calls[name] = gc.run_kernel(k, batches[-1])[2]
    if args.only:
        for _ in range(4):
            calls[args.only]()
        torch.cuda.synchronize()
        return
    rounds = {name: [] for name in calls}
    for _ in range(5):
        for name, fn in calls.items():
            rounds[name].append(gc.time_ms(fn, reps=20, warmup=3))
    ms = {name: statistics.median(t) for name, t in rounds.items()}
    full = 4 * b * 32 * s * s * 128
    rows = {name: {"ms": t, "TFLOPs": (full / 2 if name in ("causal", "bits_causal")
                                       else full) / t / 1e9}
            for name, t in ms.items()}
    rows["bits_causal_vs_causal"] = ms["causal"] / ms["bits_causal"]
    rows["bits_all_vs_plain"] = ms["plain"] / ms["bits_all"]
    print(json.dumps(rows, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "shape": args.shape,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

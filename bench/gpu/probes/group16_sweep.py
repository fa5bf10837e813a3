"""Group-16 decode options sweep (issue 23: group 16 >= 0.95x group 8).

Times plain_h64_g16_p16 (Hq 64 / Hkv 4, D128, page 16, bf16) of several
bundles -- the same function compiled with different flashir-bundle options
-- round-robin in one process next to plain_h64_p16 (Hq 64 / Hkv 8) of the
reference bundle, B64 L8192, and reports each one's bandwidth and ratio.

    python3 bench/gpu/probes/group16_sweep.py --ref build-gpu/bundle \
        --variants DIR... [--g8-variants DIR...] --out $OUT
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import gpu_check as gc  # noqa: E402
from coverage_bench import load  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", required=True)
    ap.add_argument("--variants", nargs="+", required=True)
    ap.add_argument("--g8-variants", nargs="*", default=[],
                    help="bundles of plain_h64_p16 with other options (is group 8 "
                         "faster with them too?)")
    ap.add_argument("--out", default=".")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(11)
    b, l = 64, 8192
    kernels = {"g8 (reference)": load(args.ref)["plain_h64_p16"]}
    for d in args.g8_variants:
        kernels["g8 " + os.path.basename(d.rstrip("/"))] = load(d)["plain_h64_p16"]
    for d in args.variants:
        kernels[os.path.basename(d.rstrip("/"))] = load(d)["plain_h64_g16_p16"]
    batches, calls = [], {}
    for name, k in kernels.items():
        batches.append(gc.make_batch(k, [1] * b, [l] * b, gen, shared_pages=False))
        out, lse, call = gc.run_kernel(k, batches[-1])
        calls[name] = call
        # Correct before timed: float64 reference of the same batch.
        ref_o, _ = gc.reference(k, batches[-1])
        call()
        torch.cuda.synchronize()
        rel = ((out.double() - ref_o).norm() / ref_o.norm()).item()
        assert rel < 1e-2, (name, rel)
    rounds = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, fn in calls.items():
            rounds[name].append(gc.time_ms(fn, reps=20, warmup=3))
    ms = {name: statistics.median(t) for name, t in rounds.items()}
    rows = []
    ref_tbps = None
    for name, k in kernels.items():
        tbps = b * l * k.hkv * k.d * 2 * 2 / ms[name] / 1e9
        ref_tbps = ref_tbps or tbps
        rows.append({"kernel": name, "ms": ms[name], "TBps": tbps,
                     "vs_g8": tbps / ref_tbps})
        print(json.dumps(rows[-1]))
    with open(os.path.join(args.out, "group16_sweep.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(),
                   "torch": torch.__version__, "B": b, "L": l, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

"""Calibrates the planner's cost model (issue 6, eq. 11) for a split-KV
decode kernel on the GPU at hand and stores it in the bundle's manifest.

A chunk's cost is alpha * query rows + beta * keys (alpha also carries a
CTA's fixed overhead). A wave of CTAs (SMs x resident CTAs per SM, from the
driver's occupancy calculator) runs chunks of equal shape; one wave and two
waves are timed for each key count, and their difference is one CTA's time
without the kernel's launch and ramp (which a plan pays once, not per
chunk). The fit is t = alpha + beta * keys over keys in 128..4096 with one
query row (the kernels walk a chunk's keys once per query row; the runtime
plans them with CostModel::keysPerQueryRow, beta * rows * keys). The manifest's
target entry of the kernel gets "cost": {"alpha", "beta"} in keys (beta = 1,
the planner defaults' units) plus the fit in microseconds and its worst
relative error; the C++ runtime (KernelBundle, SplitKVRunner, the C
API and python/flashir) plans with it from then on.

    python3 bench/gpu/calibrate.py --bundle build-gpu/bundle-split \\
        --kernel plain_h32_p16_decode_0 [--chip sm_90a] [--out $OUT]
"""

import argparse
import ctypes
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check as gc  # noqa: E402


def one_wave_ctas(k: gc.Kernel):
    blocks = ctypes.c_int()
    gc._check(gc._cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks), k.fn, k.block, ctypes.c_size_t(k.shared)),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return sms * blocks.value


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True, help="a split-KV bundle")
    ap.add_argument("--kernel", default="plain_h32_p16_decode_0")
    ap.add_argument("--chip", default="sm_90a")
    ap.add_argument("--out", default=None, help="also write calibration.json here")
    args = ap.parse_args()
    path = os.path.join(args.bundle, "manifest.json")
    manifest = json.load(open(path))
    target = [t for t in manifest["targets"] if t["chip"] == args.chip][0]
    image = target.get("cubin") or target["ptx"]
    module = gc.Module(open(os.path.join(args.bundle, image), "rb").read())
    k = gc.load_kernels(manifest, module, args.chip)[args.kernel]
    if not k.chunked:
        sys.exit(f"{args.kernel} is not a split-KV decode kernel")
    requests = max(1, one_wave_ctas(k) // k.hkv)
    gen = torch.Generator().manual_seed(3)
    samples = []
    for keys in (128, 256, 512, 1024, 2048, 4096):
        us = {}
        for waves in (1, 2):
            n = requests * waves
            batch = gc.make_batch(k, [1] * n, [keys] * n, gen, shared_pages=False)
            _, _, call = gc.run_kernel(k, batch, chunk_len=keys, merge=False)
            us[waves] = 1e3 * gc.time_ms(call)
        samples.append((keys, us[1], us[2]))
        print(json.dumps({"keys": keys, "requests_per_wave": requests,
                          "one_wave_us": us[1], "two_waves_us": us[2]}))
    a = torch.tensor([[1.0, n] for n, _, _ in samples], dtype=torch.float64)
    t = torch.tensor([[t2 - t1] for _, t1, t2 in samples], dtype=torch.float64)
    alpha, beta = torch.linalg.lstsq(a, t).solution[:, 0].tolist()
    fit = (a @ torch.tensor([[alpha], [beta]], dtype=torch.float64) - t).abs() / t
    if not beta > 0:
        sys.exit(f"fit gave beta = {beta} us per key: not a usable cost model")
    # Stored in keys (beta = 1), the planner defaults' units; the fit in us.
    cost = {"alpha": max(alpha, 0.0) / beta, "beta": 1.0,
            "alpha_us": alpha, "beta_us": beta, "gpu": torch.cuda.get_device_name(),
            "fit_max_rel_err": fit.max().item()}
    target.setdefault("kernels", {}).setdefault(args.kernel, {})["cost"] = cost
    with open(path, "w") as f:
        json.dump(manifest, f, indent=2)
    print(json.dumps({"kernel": args.kernel, "chip": args.chip, **cost}))
    if args.out:
        with open(os.path.join(args.out, "calibration.json"), "w") as f:
            json.dump({"kernel": args.kernel, "chip": args.chip, "samples": samples,
                       **cost}, f, indent=1)


if __name__ == "__main__":
    main()

"""Launches one FlashIR prefill kernel and SDPA-FA2 on the same shape, a few
times each, for Nsight Compute to compare (instructions per warp, stall
reasons, tensor pipe utilization):

  ncu --clock-control none -k regex:'plain_d128|flash_fwd' --launch-skip 2 \\
      --launch-count 2 --section WarpStateStats --section InstructionStats \\
      python3 bench/gpu/probes/prefill_ncu.py --bundle B --kernel plain_d128_g4_p16_bf16

Without ncu it prints each one's time (a sanity check of the setup).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gpu_check as gc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--kernel", required=True, help="FlashIR function name")
    ap.add_argument("--chip", default="sm_90a")
    ap.add_argument("--shape", default="4x4096", help="B x S (query and key lengths equal)")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--launches", type=int, default=3)
    args = ap.parse_args()
    import json
    manifest = json.load(open(os.path.join(args.bundle, "manifest.json")))
    target = next(t for t in manifest["targets"] if t["chip"] == args.chip)
    image = target.get("cubin") or target["ptx"]
    module = gc.Module(open(os.path.join(args.bundle, image), "rb").read())
    kernels = gc.load_kernels(manifest, module, args.chip)
    names = [n for n in kernels if n.rsplit("_prefill_", 1)[0] == args.kernel]
    if not names:
        sys.exit(f"no prefill kernel of {args.kernel} in {args.bundle}")
    k = kernels[names[0]]
    b, s = (int(x) for x in args.shape.split("x"))
    batch = gc.make_batch(k, [s] * b, [s] * b, torch.Generator().manual_seed(1),
                          shared_pages=False)
    out, lse, call = gc.run_kernel(k, batch)
    for _ in range(args.launches):
        call()
    torch.cuda.synchronize()
    print(f"{args.kernel}: {gc.time_ms(call, reps=5, warmup=1, inner=1):.3f} ms")
    from torch.nn.attention import SDPBackend
    q = torch.randn(b, k.hq, s, k.d, device="cuda", dtype=torch.bfloat16)
    kc = torch.randn(b, k.hkv, s, k.d, device="cuda", dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    for _ in range(args.launches):
        gc.sdpa_ms(SDPBackend.FLASH_ATTENTION, q, kc, vc, is_causal=args.causal, reps=1,
                   warmup=0, inner=1)
    print("sdpa_fa2: %.3f ms" % gc.sdpa_ms(SDPBackend.FLASH_ATTENTION, q, kc, vc,
                                           is_causal=args.causal, reps=5, warmup=1, inner=1))


if __name__ == "__main__":
    main()

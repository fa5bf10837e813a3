"""Runs one decode (or prefill: --qo-len) benchmark shape a few times for
Nsight Compute: FlashIR's kernels from a bundle (paged KV) and an SDPA
backend on contiguous KV of the same bytes, so `ncu` can compare their
memory and warp-stall profiles.

    ncu --clock-control none --section SpeedOfLight ... \\
        -k regex:'plain_h32_p16|softcap_h32_p16|cudnn|flash' \\
        python3 bench/gpu/profile_decode.py --bundle build-gpu/bundle
"""

import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check as gc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--chip", default="sm_90a")
    ap.add_argument("--kernels", nargs="*",
                    default=["plain_h32_p16_decode_0", "softcap_h32_p16_decode_1"])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--kv-len", type=int, default=4096)
    ap.add_argument("--qo-len", type=int, default=1,
                    help="query rows per request (prefill kernels: the kv length)")
    ap.add_argument("--causal", action="store_true", help="the SDPA peer masks causally")
    ap.add_argument("--peer", choices=["cudnn", "fa2"], default="cudnn")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    manifest = json.load(open(os.path.join(args.bundle, "manifest.json")))
    target = [t for t in manifest["targets"] if t["chip"] == args.chip][0]
    image = target.get("cubin") or target["ptx"]
    module = gc.Module(open(os.path.join(args.bundle, image), "rb").read())
    kernels = gc.load_kernels(manifest, module, args.chip)
    gen = torch.Generator().manual_seed(1)
    b, n = args.batch, args.kv_len
    for name in args.kernels:
        k = kernels[name]
        batch = gc.make_batch(k, [args.qo_len] * b, [n] * b, gen, shared_pages=False)
        _, _, call = gc.run_kernel(k, batch)
        for _ in range(args.reps):
            call()
        torch.cuda.synchronize()
        del batch, call
    k = kernels[args.kernels[0]]
    q = torch.randn(b, k.hq, args.qo_len, k.d, device="cuda", dtype=torch.bfloat16)
    kc = torch.randn(b, k.hkv, n, k.d, device="cuda", dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = SDPBackend.CUDNN_ATTENTION if args.peer == "cudnn" else SDPBackend.FLASH_ATTENTION
    with sdpa_kernel(backend):
        for _ in range(args.reps):
            F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True, is_causal=args.causal)
    torch.cuda.synchronize()
    print("profiled", args.kernels, "and SDPA", args.peer, f"at B{b} qo {args.qo_len} L{n}")


if __name__ == "__main__":
    main()

"""Whether prefetching the suffixes' pages into L2 while the prefix kernel
runs would shorten the cascade's tail (issue 25 probe). shared_prefix_bench's
B64 case (prefix 32768, suffix 128): the prefix kernel P with the suffix
decode kernel A behind it (programmatic, as the runtime chains them),
forked beside a one-CTA CUDA kernel on a second stream (prefetch_pages.cu,
built here with nvcc) that sleeps DELAY us from its start and then prefetches
every suffix page of the K and V pools into L2 (cp.async.bulk.prefetch.L2,
one 32 KB page per instruction; or prefetch.global.L2::evict_last per
128-byte line; --ctas CTAs share the pages). The same fork with a kernel
that prefetches nothing is the baseline. Times each (median of back-to-back steps).

    python3 bench/gpu/probes/suffix_l2_prefetch.py --decode-bundle build-gpu/cascade-decode \\
        --prefill-bundle build-gpu/cascade-prefill-wgmma \\
        --prefill-split-bundle build-gpu/cpR-split --out $OUT
"""
import argparse
import ctypes
import json
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
import gpu_check as gc  # noqa: E402
import shared_prefix_bench as spb  # noqa: E402

PREFETCH = r"""
extern "C" __global__ void prefetch_pages(const char *k, const char *v, const int *pages,
                                          int n, long long delay_ns, int mode,
                                          long long page_bytes) {
  long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(500);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < delay_ns);
  int first = threadIdx.x + blockIdx.x * blockDim.x, step = blockDim.x * gridDim.x;
  for (int i = first; i < n * (mode == 2 ? int(page_bytes / 128) : 1); i += step) {
    if (mode == 1) {
      long long off = (long long)pages[i] * page_bytes;
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(k + off), "r"(int(page_bytes)) : "memory");
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(v + off), "r"(int(page_bytes)) : "memory");
    } else if (mode == 2) {
      int lines = int(page_bytes / 128);
      long long off = (long long)pages[i / lines] * page_bytes + (i % lines) * 128;
      asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(k + off));
      asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(v + off));
    }
  }
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode-bundle", required=True)
    ap.add_argument("--prefill-bundle", required=True)
    ap.add_argument("--prefill-split-bundle", required=True)
    ap.add_argument("--prefix-chunks", type=int, default=8)
    ap.add_argument("--suffix-chunks", type=int, default=2)
    ap.add_argument("--delays-us", type=float, nargs="*", default=[0, 20, 35, 45, 52])
    ap.add_argument("--ctas", type=int, nargs="*", default=[1],
                    help="CTAs of the prefetching kernel (each on an SM the prefix leaves)")
    ap.add_argument("--modes", nargs="*", default=["bulk", "lines"])
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    fn = gc.cuda_function(PREFETCH, "prefetch_pages", args.out)

    dk = spb.load(args.decode_bundle, "plain_h32_p16")
    sk = spb.load(args.decode_bundle + "-split-w1", "plain_h32_p16")
    spk = spb.load(args.prefill_split_bundle, "plain_d128_g4_p16_bf16_fused")
    b, prefix, suffix = 64, 32768, 128
    gen = torch.Generator().manual_seed(5)
    kp, vp, q, shared, own, _ = spb.inputs(dk, b, prefix, suffix, gen)
    page_bytes = kp[0].numel() * kp.element_size()
    pages = torch.tensor([p for o in own for p in o], dtype=torch.int32, device="cuda")
    _, _, call = spb.cascade(sk, spk, q, kp, vp, shared, own, args.prefix_chunks, prefix,
                             [suffix] * b, overlap="chain", suffix_chunks=args.suffix_chunks)
    call()
    P, A = call.prefix, call.suffix
    side = torch.cuda.Stream()
    fork, join = torch.cuda.Event(), torch.cuda.Event()

    def forked(n, delay_us, mode, ctas=1):
        with torch.cuda.stream(side):
            launch = gc.prepare_launch(
                fn, (ctas, 1, 1), 1024,
                [ctypes.c_void_p(kp.data_ptr()), ctypes.c_void_p(vp.data_ptr()),
                 ctypes.c_void_p(pages.data_ptr()), ctypes.c_int(n),
                 ctypes.c_int64(int(delay_us * 1000)), ctypes.c_int(mode),
                 ctypes.c_int64(page_bytes)])

        def step():
            fork.record()
            side.wait_event(fork)
            with torch.cuda.stream(side):
                launch()
                join.record(side)
            P()
            A()
            torch.cuda.current_stream().wait_event(join)
        step.keep = launch
        return step

    rows = {"P": gc.time_ms(P, reps=30) * 1000, "P A": gc.time_ms(lambda: (P(), A()), reps=30) * 1000,
            "A alone": gc.time_ms(A, reps=30) * 1000}
    for delay in args.delays_us:
        rows[f"P A | nothing after {delay:g} us"] = gc.time_ms(forked(0, delay, 0), reps=30) * 1000
        for ctas in args.ctas:
            for mode, name in ((1, "bulk"), (2, "lines")):
                if name in args.modes:
                    rows[f"P A | {name} x{ctas} after {delay:g} us"] = gc.time_ms(
                        forked(pages.numel(), delay, mode, ctas), reps=30) * 1000
    for k, v in rows.items():
        print(f"{k:40s} {v:8.2f} us", flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "us": rows},
              open(os.path.join(args.out, "suffix_l2_prefetch.json"), "w"), indent=1)


if __name__ == "__main__":
    main()

"""What the shared-prefix step's tail costs (issue 7 probe): B64, prefix
32768, suffix 128 (shared_prefix_bench.py's case), chained as the runtime
runs it (prefix kernel P; suffix decode A launched behind it, its last CTA
waiting for P; merge C behind A, waiting for A), against the same step with
parts left out or replaced by a CUDA kernel that only waits
(griddepcontrol.wait; wait_only.cu, compiled here with nvcc), and with
other launch orders (the prefix kernel launched programmatically too, as
the runtime does; the suffix on a second stream with the merge behind the
prefix kernel). Times each (median of back-to-back steps); the differences
say what each hop and the merge's work cost. --suffix-bundles: other suffix
kernels, each chained, prefix + suffix, and alone; --suffix-shared: the
suffix kernel launched with more shared memory than it needs, so fewer of
its CTAs fit an SM (they pile onto the SMs the prefix kernel frees first).

    python3 bench/gpu/probes/cascade_tail.py --decode-bundle build-gpu/bundle \\
        --prefill-bundle build-gpu/bundle-prefill --out $OUT
"""
import argparse
import copy
import json
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
import gpu_check as gc  # noqa: E402
import shared_prefix_bench as spb  # noqa: E402

WAIT_ONLY = r"""
extern "C" __global__ void wait_only() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode-bundle", required=True)
    ap.add_argument("--prefill-bundle", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--prefill-split-bundle", default=None,
                    help="split-KV prefill bundle (default: PREFILL_BUNDLE-split)")
    ap.add_argument("--prefix-chunks", type=int, default=16)
    ap.add_argument("--suffix-chunks", type=int, default=1,
                    help="chunks per suffix (the runtime plans one per 64 keys)")
    ap.add_argument("--suffix-bundles", nargs="*", default=[],
                    help="other split-KV decode bundles of plain_h32_p16 for the suffix "
                         "(each timed chained, and prefix + suffix without the merge)")
    ap.add_argument("--suffix-shared", type=int, nargs="*", default=[],
                    help="dynamic shared memory bytes to launch the suffix kernel with "
                         "(more than it needs caps its CTAs per SM), each timed chained "
                         "and prefix + suffix")
    args = ap.parse_args()
    wait_fn = gc.cuda_function(WAIT_ONLY, "wait_only", args.out)

    dk = spb.load(args.decode_bundle, "plain_h32_p16")
    sk = spb.load(args.decode_bundle + "-split-w1", "plain_h32_p16")
    spk = spb.load(args.prefill_split_bundle or args.prefill_bundle + "-split",
                   "plain_d128_g4_p16_bf16_fused")
    b, prefix, suffix, chunks = 64, 32768, 128, args.prefix_chunks
    sc = args.suffix_chunks
    gen = torch.Generator().manual_seed(5)
    kp, vp, q, shared, own, _ = spb.inputs(dk, b, prefix, suffix, gen)
    full = spb.batch_of(dk, q, kp, vp, [1] * b, [shared + o for o in own], [spb.PAGE] * b)
    ref_o, _ = gc.reference(dk, full)

    def composed(k, overlap):
        """spb.cascade() with suffix kernel k, run once: (call, relative error
        of its output to the float64 reference)."""
        out, _, call = spb.cascade(k, spk, q, kp, vp, shared, own, chunks, prefix,
                                   [suffix] * b, overlap=overlap, suffix_chunks=sc)
        call()
        torch.cuda.synchronize()
        return call, ((out.double() - ref_o).norm() / ref_o.norm()).item()

    chain, rel = composed(sk, "chain")
    hq = dk.hq
    P, A = chain.prefix, chain.suffix
    wait_c = gc.prepare_launch(wait_fn, (b, hq, 1), 32, [], programmatic=True)
    wait_a = gc.prepare_launch(wait_fn, (b * sc, dk.hkv, 1), 32, [], programmatic=True)
    # Prefix first on this stream, the suffix on a second one, the merge
    # behind the prefix kernel (programmatic) and the suffix (join event).
    two_stream, rel2 = composed(sk, "prefix-first-pdl")
    # The chain with the prefix kernel launched programmatically too (behind
    # the previous step's merge).
    chain_pdl, rel3 = composed(sk, "chain-pdl")

    variants = {
        "P A C (chain, P pdl)": chain_pdl,
        "P A C (chain)": chain,
        "P A": lambda: (P(), A()),
        "P A wait": lambda: (P(), A(), wait_c()),
        "P": P,
        "P wait": lambda: (P(), wait_a()),
        "P wait wait": lambda: (P(), wait_a(), wait_c()),
        "P | A, C behind P": two_stream,
        "P C (no suffix)": lambda: (P(), two_stream.merge()),
    }
    rows = {"chain_rel_err": rel, "two_stream_rel_err": rel2, "chain_pdl_rel_err": rel3}
    print("rel err chain", rel, "two streams", rel2, "chain, P pdl", rel3)
    for name, fn in variants.items():
        rows[name] = round(gc.time_ms(fn, reps=30) * 1000, 2)
        print(f"{name:24s} {rows[name]:8.2f} us", flush=True)
    for bundle in args.suffix_bundles:
        c, err = composed(spb.load(bundle, "plain_h32_p16"), "chain")
        name = os.path.basename(bundle.rstrip("/"))
        rows[f"{name}_rel_err"] = err
        rows[f"{name} chain"] = round(gc.time_ms(c, reps=30) * 1000, 2)
        rows[f"{name} P A"] = round(gc.time_ms(lambda: (c.prefix(), c.suffix()), reps=30) * 1000, 2)
        rows[f"{name} A alone"] = round(gc.time_ms(c.suffix, reps=30) * 1000, 2)
        print(name, {k2: v for k2, v in rows.items() if k2.startswith(name)}, flush=True)
    for nbytes in args.suffix_shared:
        k = copy.copy(sk)
        k.shared = max(sk.shared, nbytes)
        gc.allow_shared(k.fn, k.shared)
        c, err = composed(k, "chain")
        name = f"suffix shared {k.shared}"
        rows[f"{name} rel_err"] = err
        rows[f"{name} chain"] = round(gc.time_ms(c, reps=30) * 1000, 2)
        rows[f"{name} P A"] = round(gc.time_ms(lambda: (c.prefix(), c.suffix()), reps=30) * 1000, 2)
        print(name, {k2: v for k2, v in rows.items() if k2.startswith(name)}, flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "prefix_chunks": chunks,
               "suffix_chunks": sc, "us": rows},
              open(os.path.join(args.out, "cascade_tail.json"), "w"), indent=1)


if __name__ == "__main__":
    main()

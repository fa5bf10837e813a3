"""Where a shared-prefix step's time goes, kernel by kernel (issue 7 probe):
B64, prefix 32768, suffix 128 (shared_prefix_bench.py's case) with the
suffix on DECODE_BUNDLE-split (4 warps per CTA) or --suffix-bundles, prefix
kernels of --prefix-bundles, uncomposed decode kernels of --plain-bundles,
in three launch orders and through the runtime; the compositions run 8
times back to back behind a GPU sleep under torch.profiler; prints every
kernel's start and end relative to the step's first kernel and the idle time
between steps.

    python3 bench/gpu/probes/cascade_timeline.py --decode-bundle build-gpu/bundle \\
        --prefill-bundle build-gpu/bundle-prefill --out $OUT
"""
import argparse
import json
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "python"))
import gpu_check as gc  # noqa: E402
import shared_prefix_bench as spb  # noqa: E402


def timeline(fn, steps, out_path):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        torch.cuda._sleep(2_000_000)
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(out_path)
    events = [e for e in json.load(open(out_path))["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") == "kernel"
              and "sleep" not in e["name"] and "spin" not in e["name"]]  # torch.cuda._sleep
    events.sort(key=lambda e: e["ts"])
    return [(e["name"][:40], e["ts"], e["ts"] + e["dur"]) for e in events]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode-bundle", required=True)
    ap.add_argument("--prefill-bundle", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--suffix-bundles", nargs="*", default=[],
                    help="other split-KV decode bundles of plain_h32_p16 for the suffix")
    ap.add_argument("--prefix-bundles", nargs="*", default=[],
                    help="DIR:CHUNKS, other split-KV prefill bundles of "
                         "plain_d128_g4_p16_bf16_fused for the prefix (with the first "
                         "suffix bundle)")
    ap.add_argument("--plain-bundles", nargs="*", default=[],
                    help="other decode bundles of plain_h32_p16 for the uncomposed step")
    args = ap.parse_args()
    dk = spb.load(args.decode_bundle, "plain_h32_p16")
    sk = spb.load(args.decode_bundle + "-split", "plain_h32_p16")
    spk = spb.load(args.prefill_bundle + "-split", "plain_d128_g4_p16_bf16_fused")
    import flashir
    b, prefix, suffix, chunks = 64, 32768, 128, 16
    gen = torch.Generator().manual_seed(5)
    page, suffix_pages = spb.PAGE, suffix // spb.PAGE
    kp, vp, q, shared, own, num_pages = spb.inputs(dk, b, prefix, suffix, gen)
    # The uncomposed step (each request's decode over prefix + suffix) with
    # the default and other decode kernels.
    full_ref = None
    for bundle in [args.decode_bundle] + args.plain_bundles:
        k = spb.load(bundle, "plain_h32_p16")
        full = spb.batch_of(k, q, kp, vp, [1] * b, [shared + o for o in own], [page] * b)
        o, _, c = gc.run_kernel(k, full)
        c()
        torch.cuda.synchronize()
        full_ref = o.double() if full_ref is None else full_ref
        print("not composed", bundle, "rel diff",
              f"{((o.double() - full_ref).norm() / full_ref.norm()).item():.2e}",
              "ms", round(gc.time_ms(c, reps=20), 4))
    calls = {}
    base = None
    for label, bundle in [("default", None)] + [(os.path.basename(x), x)
                                                 for x in args.suffix_bundles]:
        k = sk if bundle is None else spb.load(bundle, "plain_h32_p16")
        for mode in ("suffix-first", "suffix-main", "chain", False):
            o, l, c = spb.cascade(k, spk, q, kp, vp, shared, own, chunks, prefix, [suffix] * b,
                                  overlap=mode)
            c()
            torch.cuda.synchronize()
            if base is None:
                base = o.double()
            err = ((o.double() - base).norm() / base.norm()).item()
            name = f"{label}_{mode or 'sequential'}"
            # The suffix kernel alone where it runs on this stream (time_ms
            # records its events here).
            alone = ("" if mode in ("suffix-first", "chain") else
                     f" suffix alone ms {gc.time_ms(c.suffix, reps=20):.4f}")
            print(name, "rel diff to default", f"{err:.2e}", "ms",
                  round(gc.time_ms(c, reps=20), 4), alone)
            if label == "default" or mode in ("suffix-first", "chain"):
                calls[name] = c
    sk1 = spb.load(args.suffix_bundles[0], "plain_h32_p16") if args.suffix_bundles else sk
    for spec in ["default:16"] + args.prefix_bundles:
        bundle, cn = spec.rsplit(":", 1)
        pk = spk if bundle == "default" else spb.load(bundle, "plain_d128_g4_p16_bf16_fused")
        o, l, c = spb.cascade(sk1, pk, q, kp, vp, shared, own, int(cn), prefix, [suffix] * b,
                              overlap="suffix-first")
        c()
        torch.cuda.synchronize()
        err = ((o.double() - base).norm() / base.norm()).item()
        print("prefix", spec, "rel diff to default", f"{err:.2e}", "ms",
              round(gc.time_ms(c, reps=20), 4), "prefix alone ms",
              round(gc.time_ms(c.prefix, reps=20), 4))
    try:  # the runtime's step, where libflashir_c.so is built
        wrapper = flashir.SharedPrefixRunner(
            args.prefill_bundle + "-split", "plain_d128_g4_p16_bf16_fused",
            args.decode_bundle + "-split", "plain_h32_p16", max_requests=b)
        wrapper.plan(torch.tensor(shared, dtype=torch.int32), prefix,
                     torch.tensor([suffix_pages * r for r in range(b + 1)], dtype=torch.int32),
                     torch.tensor([p for o in own for p in o], dtype=torch.int32),
                     torch.full((b,), page, dtype=torch.int32), num_pages)
        pid = torch.tensor(shared, dtype=torch.int32, device="cuda")
        sid = torch.tensor([p for o in own for p in o], dtype=torch.int32, device="cuda")
        calls["runtime"] = lambda: wrapper.run(q, (kp, vp), pid, sid)
    except flashir.FlashIRError as e:
        print("runtime step skipped:", e)
    report = {}
    for name, fn in calls.items():
        ev = timeline(fn, 8, os.path.join(args.out, f"trace_{name}.json"))
        # A step: the kernels up to and including its merge kernel.
        steps, cur = [], []
        for e in ev:
            cur.append(e)
            if "_merge_" in e[0]:
                steps.append(cur)
                cur = []
        rows = []
        for i, st in enumerate(steps):
            t0 = min(s for _, s, _ in st)
            t1 = max(e for _, _, e in st)
            nxt = min(s for _, s, _ in steps[i + 1]) if i + 1 < len(steps) else None
            rows.append({"span_us": round(t1 - t0, 2),
                         "gap_to_next_us": round(nxt - t1, 2) if nxt else None,
                         "kernels": {n.split("_")[-2]: (round(s - t0, 2), round(e - t0, 2))
                                     for n, s, e in st}})
        report[name] = rows
        print(name, "step 4:", json.dumps(rows[4]["kernels"]))
        print(name, "spans", [r["span_us"] for r in rows], "gaps",
              [r["gap_to_next_us"] for r in rows])
    json.dump(report, open(os.path.join(args.out, "cascade_timeline.json"), "w"), indent=1)


if __name__ == "__main__":
    main()

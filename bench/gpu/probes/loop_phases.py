"""Where a wgmma prefill consumer's key-loop iteration spends its time
(issue 25 probe).

The kernel's PTX (one entry of a bundle) is rewritten so that each thread
adds the cycles between consecutive markers of the key loop into
registers; the first thread of each warpgroup stores the sums at exit
into its CTA's record. The markers, in the loop's order:

  k_wait    the loop's K tile wait begins (the time since the previous
            iteration's pv_done: O's rescale, the loop's top)
  k_landed  the K tile has landed
  s_issued  S_j = Q.K^T issued (its commit)
  v_landed  the previous V tile has landed
  pv_issued P_{j-1}.V_{j-1} issued (its commit)
  s_done    S_j's products done (wait_group 1)
  pv_done   P_{j-1}.V_{j-1} done (the loop's wait_group 0; ptxas moves
            the wait itself up into the softmax, so this segment is the
            softmax and the rest of that wait)

Each segment is reported per iteration (its sum over the CTA's loop over
the loop's iterations), 10% / median / 90% over CTAs, separately for each
consumer warpgroup, in cycles and in ns at the clock each CTA ran (its
clock64 over its globaltimer from entry to exit). The markers cost a few
instructions each and may move ptxas's schedule: the report gives the
traced and the plain kernel's time.

The loop is found in the PTX between the consumers' first and last
wgmma.wait_group 0 (S0's and the last P.V's): three mbarrier waits (K and V
in the loop, the last V), three commits (S and P.V in the loop, the last
P.V), one wait_group 1 and the loop's wait_group 0; kernels built
otherwise (key hooks, ...) are refused.

    python3 bench/gpu/probes/loop_phases.py --bundle build-gpu/main \\
        --func plain_d128_g4_p16_bf16 --shape 4x4096 --out $OUT
"""
import argparse
import json
import os
import re
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, here)
import ptx_trace  # noqa: E402
from ptx_trace import (SUM_REGS, consumer_lines, entry_span, quant, splice,  # noqa: E402
                       store_sums, sum_step, sums_init, warpgroup_record)

SEGMENTS = ["k_wait", "k_landed", "s_issued", "v_landed", "pv_issued", "s_done", "pv_done"]
WORDS = 16  # per (CTA, warpgroup), as below
WGS = 8
# A record's words: 0 clock64 at entry, 1..7 the segments' sums, 8 / 9
# globaltimer at entry / exit, 10 smid, 11 iterations, 12 clock64 at exit.
REGS = """\t.reg .b64 %firT<4>;
\t.reg .b32 %firW<5>;
\t.reg .pred %firP;
""" + SUM_REGS


def entry_code(ctas):
    s = warpgroup_record(ctas, WGS, WORDS)
    s += "\tmov.u64 %firT0, %clock64;\n\t@%firP st.global.u64 [%firT1], %firT0;\n"
    s += "\tmov.u64 %firT0, %globaltimer;\n\t@%firP st.global.u64 [%firT1+64], %firT0;\n"
    s += "\tmov.u32 %firW4, %smid;\n\tcvt.u64.u32 %firT0, %firW4;\n"
    s += "\t@%firP st.global.u64 [%firT1+80], %firT0;\n"
    return s + sums_init()


def exit_code(ctas):
    s = warpgroup_record(ctas, WGS, WORDS) + store_sums()
    s += "\tmov.u64 %firT0, %globaltimer;\n\t@%firP st.global.u64 [%firT1+72], %firT0;\n"
    s += "\tmov.u64 %firT0, %clock64;\n\t@%firP st.global.u64 [%firT1+96], %firT0;\n"
    return s


def loop_markers(lines, lo, hi):
    """Line index -> marker (0: the loop's start, S0 done; 1..7 as
    SEGMENTS), inserted before the line."""
    find = lambda pat, a=lo, b=hi: [i for i in range(a, b) if re.search(pat, lines[i])]
    waits0 = find(r"wgmma\.wait_group\.sync\.aligned 0;")
    if len(waits0) != 3:
        raise SystemExit(f"expected 3 wait_group 0 (S0, loop, last P.V), found {len(waits0)}")
    first, last = waits0[0], waits0[-1]
    tries = find(r"mbarrier\.try_wait", first, last)
    commits = find(r"wgmma\.commit_group", first, last)
    waits1 = find(r"wgmma\.wait_group\.sync\.aligned 1;", first, last)
    if len(tries) != 3 or len(commits) != 3 or len(waits1) != 1:
        raise SystemExit(f"unexpected loop: {len(tries)} waits, {len(commits)} commits, "
                         f"{len(waits1)} wait_group 1")
    # Each mbarrier wait is an inline-asm block { ... } of its own.
    open_at = lambda i: max(j for j in range(i) if lines[j].strip() == "{")
    close_at = lambda i: next(j for j in range(i, hi) if lines[j].strip() == "}")
    k_try, v_try = tries[0], tries[1]
    return {first + 1: 0, open_at(k_try): 1, close_at(k_try) + 1: 2, commits[0] + 1: 3,
            close_at(v_try) + 1: 4, commits[1] + 1: 5, waits1[0] + 1: 6, waits0[1] + 1: 7}


def instrument(ptx, entry, ctas):
    start, end, lines = entry_span(ptx, entry)
    body = lines.index("{")
    lo, hi = consumer_lines(lines)
    code = {i: ("\tmov.u32 %firS0, %clock;\n" if m == 0 else sum_step(m))
            for i, m in loop_markers(lines, lo, hi).items()}
    for i, line in enumerate(lines):
        if line.strip() == "ret;":
            code[i] = exit_code(ctas)
    out = []
    for i, line in enumerate(lines):
        if i == body + 1:
            out.append(REGS + entry_code(ctas))
        if i in code:
            out.append(code[i])
        out.append(line)
    return splice(ptx, start, end, out,
                  f".global .align 8 .b64 fir_trace[{WORDS * WGS * ctas}];\n")


def traced_bundle(bundle, entry, ctas, dst, ptxas="ptxas"):
    return ptx_trace.traced_bundle(bundle, dst, lambda ptx: instrument(ptx, entry, ctas),
                                   ptxas, verbose=True)


def consumer_stats(recs):
    """Per-iteration segments of one consumer warpgroup's records."""
    walked = [r for r in recs if r[11] and r[12] > r[0] and r[9] > r[8]]
    stats = {"ctas": len(walked)}
    mhz = [(r[12] - r[0]) / ((r[9] - r[8]) / 1000) for r in walked]
    stats["sm_mhz"] = [round(quant(mhz, q), 1) for q in (0.1, 0.5, 0.9)]
    total = [0.0] * len(walked)
    for p, name in enumerate(SEGMENTS, start=1):
        cyc = [r[p] / r[11] for r in walked]
        ns = [1000 * c / m for c, m in zip(cyc, mhz)]
        total = [t + c for t, c in zip(total, cyc)]
        stats[name] = {"cycles": [round(quant(cyc, q), 1) for q in (0.1, 0.5, 0.9)],
                       "ns": [round(quant(ns, q), 1) for q in (0.1, 0.5, 0.9)]}
    stats["iteration_cycles"] = [round(quant(total, q), 1) for q in (0.1, 0.5, 0.9)]
    stats["iterations"] = [quant([r[11] for r in walked], q) for q in (0.0, 0.5, 1.0)]
    return stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--func", default="plain_d128_g4_p16_bf16")
    ap.add_argument("--shape", default="4x4096")
    ap.add_argument("--instrument-only", metavar="DIR",
                    help="write and assemble the traced bundle into DIR, run nothing")
    ap.add_argument("--ptxas", default="ptxas")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    b, s = map(int, args.shape.split("x"))
    ptx = open(os.path.join(args.bundle, "kernels.sm_90a.ptx")).read()
    entry = re.search(rf"\.entry ({args.func}_prefill_\d+)\(", ptx).group(1)
    if args.instrument_only:
        traced_bundle(args.bundle, entry, 1024, args.instrument_only, args.ptxas)
        return
    import torch
    import gpu_check as gc
    import shared_prefix_bench as spb
    from cta_phases import trace_records
    plain = spb.load(args.bundle, args.func)
    gen = torch.Generator().manual_seed(3)
    batch = gc.make_batch(plain, [s] * b, [s] * b, gen, shared_pages=False)
    ctas = b * plain.hq * ((s + 63) // 64)  # an upper bound on the grid
    traced_dir = traced_bundle(args.bundle, entry, ctas,
                               os.path.join(tempfile.mkdtemp(), "traced"), args.ptxas)
    report = {"device": torch.cuda.get_device_name(), "func": args.func, "shape": args.shape}
    recs = trace_records(plain, traced_dir, args.func, batch, WORDS, report)
    for wg in range(1, WGS):
        mine = [r for i, r in enumerate(recs) if i % WGS == wg and r[8]]
        if any(r[11] for r in mine):
            report[f"consumer_{wg}"] = consumer_stats(mine)
    print(json.dumps(report, indent=1))
    json.dump(report, open(os.path.join(args.out, f"loop_phases_{args.func}.json"), "w"),
              indent=1)


if __name__ == "__main__":
    main()

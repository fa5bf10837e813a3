"""Where a wgmma prefill CTA's time goes, phase by phase (issue 25 probe).

The kernel's PTX (one entry of a bundle) is rewritten so that the first
thread of each warpgroup stores %clock64 at eight points into its CTA's
record, plus %globaltimer at entry and exit and its %smid:

  0 entry, 1 Q stored (a consumer's first named barrier of 128 threads),
  2 S0 issued (first wgmma.fence), 3 S0 done (first wait_group 0),
  4 tail (the consumer's last mbarrier wait: the last V tile),
  5 last P.V done (last wait_group 0), 6 O staged (the next named
  barrier of 128 threads), 7 exit (ret).

One batch (gpu_check.make_batch, page 16 shuffled) is launched a few times;
the last launch's records are read back. Prints the 10% / median / 90% of
each phase in microseconds (clock64 over the SM clock: by default the
clock measured per CTA, its producer's clock64 over its globaltimer from
entry to exit, the median over CTAs, as `sm_mhz`; under load the SMs run
well below their nominal 1980 MHz; --mhz sets it), the
per-key-tile time of the loop (phase 3 -> 4 over the CTA's key tiles minus
one), the CTA's fixed cost in key tiles, and the gap between the
producer's exit and the next CTA's entry on the same SM (globaltimer; the
consumers leave ~consumer_total - producer_total after the producer).
A persistent kernel (`--persistent-prefill=on`) needs --sums: each thread
adds each phase's cycles into registers and stores the sums at exit, so a
worker's record holds its phases per q tile (phase 1 from the second tile
on includes the previous tile's O stores). With --sums, ptxas 13.0 gives no
spills at d128 plain and 80 bytes at d128 causal.

    python3 bench/gpu/probes/cta_phases.py --bundle build-gpu/wgG \\
        --func plain_d128_g4_p16_bf16 --shape 4x4096 --out $OUT
    python3 bench/gpu/probes/cta_phases.py --bundle build-gpu/rows-P --sums ...
"""
import argparse
import ctypes
import json
import os
import re
import sys
import tempfile

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
import gpu_check as gc  # noqa: E402
import shared_prefix_bench as spb  # noqa: E402
import ptx_trace  # noqa: E402
from ptx_trace import (SUM_REGS, consumer_lines, entry_span, quant, splice,  # noqa: E402
                       store_sums, sum_step, sums_init, warpgroup_record)

WORDS = 12  # per (CTA, warpgroup): clock64 x 8, globaltimer in / out, smid, -
WGS = 8  # record slots per CTA: at most 8 warpgroups (d64 plain has 5)
REGS = """\t.reg .b64 %firT<4>;
\t.reg .b32 %firW<5>;
\t.reg .pred %firP;
"""


PHASES = ["q_stored", "s0_issued", "s0_done", "tail", "pv_done", "o_staged", "exit"]


def marker(i, ctas, extra="", before=""):
    s = warpgroup_record(ctas, WGS, WORDS) + before
    s += f"\tmov.u64 %firT0, %clock64;\n\t@%firP st.global.u64 [%firT1+{8 * i}], %firT0;\n"
    return s + extra


ENTRY_EXTRA = """\tmov.u64 %firT0, %globaltimer;
\t@%firP st.global.u64 [%firT1+64], %firT0;
\tmov.u32 %firW4, %smid;
\tcvt.u64.u32 %firT0, %firW4;
\t@%firP st.global.u64 [%firT1+80], %firT0;
"""
EXIT_EXTRA = """\tmov.u64 %firT0, %globaltimer;
\t@%firP st.global.u64 [%firT1+72], %firT0;
"""

# --sums: each thread adds the cycles since the previous marker into a
# register (ptx_trace's cycle sums; %firS8 counts q tiles). Markers inside a
# persistent kernel's walk then sum over its q tiles; phase 1 of the second
# tile on includes the previous tile's O stores.


def sum_marker(i, ctas):
    if i == 0:
        return marker(0, ctas, ENTRY_EXTRA, before=sums_init())
    s = sum_step(i)
    if i < 7:
        return s
    return s + warpgroup_record(ctas, WGS, WORDS) + store_sums() + EXIT_EXTRA


def instrument(ptx, entry, ctas, sums=False):
    """`ptx` with the markers in `entry` and fir_trace declared."""
    start, end, lines = entry_span(ptx, entry)
    body = lines.index("{")
    lo, hi = consumer_lines(lines)
    find = lambda pat, lo=lo: [i for i in range(lo, hi) if re.search(pat, lines[i])]
    # Q's barrier follows the fence that publishes its rows to the async proxy.
    q_bar = next(i for i in find(r"bar\.sync\s+%r\d+, 128;")
                 if any("fence.proxy.async" in l for l in lines[i - 2:i]))
    fence = find(r"wgmma\.fence")[0]
    waits = find(r"wgmma\.wait_group\.sync\.aligned 0;")
    last_try = find(r"mbarrier\.try_wait")[-1]
    tail = max(i for i in range(last_try) if lines[i].strip() == "{")
    staged = find(r"bar\.sync\s+%r\d+, 128;", waits[-1])[0]
    rets = [i for i, l in enumerate(lines) if l.strip() == "ret;"]
    at = {body + 1: 0, q_bar + 1: 1, fence: 2, waits[0] + 1: 3, tail: 4, waits[-1] + 1: 5,
          staged + 1: 6}
    at.update({r: 7 for r in rets})
    extra = {0: ENTRY_EXTRA, 7: EXIT_EXTRA}
    code = {i: sum_marker(m, ctas) if sums else marker(m, ctas, extra.get(m, ""))
            for i, m in at.items()}
    out = []
    for i, line in enumerate(lines):
        if i == body + 1:
            out.append(REGS + (SUM_REGS if sums else ""))
        if i in code:
            out.append(code[i])
        out.append(line)
    decl = f".global .align 8 .b64 fir_trace[{WORDS * WGS * ctas}];\n"
    return splice(ptx, start, end, out, decl)


def traced_bundle(bundle, entry, ctas, out_dir, sums=False):
    return ptx_trace.traced_bundle(bundle, os.path.join(out_dir, "traced"),
                                   lambda ptx: instrument(ptx, entry, ctas, sums))


def sum_stats(cons, prod, us):
    """--sums: each phase's cycles per q tile over the consumer records."""
    stats = {}
    walked = [r for r in cons if r[11]]
    for p in range(1, 8):
        d = [us(r[p]) / r[11] for r in walked]
        stats[PHASES[p - 1]] = [round(quant(d, q), 3) for q in (0.1, 0.5, 0.9)]
    stats["tiles_per_worker"] = [quant([r[11] for r in walked], q) for q in (0.0, 0.5, 1.0)]
    life = [(r[9] - r[8]) / 1000 for r in prod if r[9] > r[8]]
    stats["producer_life_us"] = [round(quant(life, q), 3) for q in (0.1, 0.5, 0.9)]
    stats["workers"] = len(walked)
    return stats


def cta_stats(cons, prod, us, keys):
    """Each phase's time per CTA over the consumer records, the loop's time
    per key tile, the fixed cost in tiles and the gaps between CTAs."""
    stats = {}
    for p in range(1, 8):
        d = [us(r[p] - r[p - 1]) for r in cons if r[p] and r[p - 1]]
        stats[PHASES[p - 1]] = [round(quant(d, q), 3) for q in (0.1, 0.5, 0.9)]
    total = [us(r[7] - r[0]) for r in cons if r[7]]
    stats["consumer_total"] = [round(quant(total, q), 3) for q in (0.1, 0.5, 0.9)]
    ptot = [us(r[7] - r[0]) for r in prod if r[7]]
    stats["producer_total"] = [round(quant(ptot, q), 3) for q in (0.1, 0.5, 0.9)]
    # The loop: key tiles of a full q tile (non-causal): ceil(s / kv) - 1.
    kv = int(os.environ.get("FIR_KV_TILE", "128"))
    tiles = (keys + kv - 1) // kv
    loop = quant([us(r[4] - r[3]) for r in cons if r[4]], 0.5)
    per = loop / max(1, tiles - 1)
    med_total = quant(total, 0.5)
    stats["per_tile_us"] = round(per, 3)
    stats["fixed_tiles"] = round(med_total / per - tiles, 2)
    # Gaps between CTAs on one SM (globaltimer, ns).
    by_sm = {}
    for r in prod:
        by_sm.setdefault(r[10], []).append((r[8], r[9]))
    gaps = []
    for ctas_on in by_sm.values():
        ctas_on.sort()
        gaps += [(b2[0] - a[1]) / 1000 for a, b2 in zip(ctas_on, ctas_on[1:]) if b2[0] > a[1]]
    stats["sm_gap_us"] = [round(quant(gaps, q), 3) for q in (0.1, 0.5, 0.9)]
    overlap = sum(1 for v in by_sm.values() for a, b2 in zip(v, v[1:]) if b2[0] < a[1])
    stats["overlapping_ctas"] = overlap
    stats["ctas"] = len(prod)
    return stats


def trace_records(plain, traced_dir, func, batch, words_per_record, report):
    """Times `func` of the traced bundle and the plain kernel on `batch`
    (into `report`, with whether their outputs agree), then runs the traced
    one three times from zeroed records and returns the last launch's
    fir_trace records."""
    tk, module = spb.load_with_module(traced_dir, func)
    ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
    gc._check(gc._cuda.cuModuleGetGlobal_v2(ctypes.byref(ptr), ctypes.byref(size),
                                            module.handle, b"fir_trace"), "fir_trace")
    words = size.value // 8
    out_t, _, tcall = gc.run_kernel(tk, batch)
    out_p, _, pcall = gc.run_kernel(plain, batch)
    report.update({"plain_ms": gc.time_ms(pcall), "traced_ms": gc.time_ms(tcall),
                   "same_output": bool(torch.equal(out_t, out_p))})
    torch.cuda.synchronize()
    gc._check(gc._cuda.cuMemsetD8_v2(ptr, 0, words * 8), "memset")
    for _ in range(3):
        tcall()
    torch.cuda.synchronize()
    buf = (ctypes.c_uint64 * words)()
    gc._check(gc._cuda.cuMemcpyDtoH_v2(buf, ptr, words * 8), "DtoH")
    n = words_per_record
    return [list(buf[r * n:(r + 1) * n]) for r in range(words // n)]


NOMINAL_MHZ = 1980.0


def measured_mhz(prod):
    """The SM clock the CTAs ran at: each producer's clock64 cycles from
    entry to exit over its globaltimer nanoseconds, the median (the
    per-CTA records only; --sums records hold sums, not timestamps); None
    without a usable record."""
    rates = [(r[7] - r[0]) / ((r[9] - r[8]) / 1000)
             for r in prod if r[7] > r[0] and r[9] > r[8]]
    return quant(rates, 0.5) if rates else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--func", default="plain_d128_g4_p16_bf16")
    ap.add_argument("--shape", default="4x4096")
    ap.add_argument("--mhz", type=float, default=0.0,
                    help="SM clock for clock64 (default: measured; with --sums 1980)")
    ap.add_argument("--sums", action="store_true",
                    help="phase sums in registers, per q tile (persistent kernels)")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    b, s = map(int, args.shape.split("x"))
    plain = spb.load(args.bundle, args.func)
    gen = torch.Generator().manual_seed(3)
    batch = gc.make_batch(plain, [s] * b, [s] * b, gen, shared_pages=False)
    ctas = b * plain.hq * ((s + 63) // 64)  # an upper bound on the grid
    work = tempfile.mkdtemp()
    ptx = open(os.path.join(args.bundle, "kernels.sm_90a.ptx")).read()
    entry = re.search(rf"\.entry ({args.func}_prefill_\d+)\(", ptx).group(1)
    traced_dir = traced_bundle(args.bundle, entry, ctas, work, args.sums)
    report = {"device": torch.cuda.get_device_name(), "func": args.func, "shape": args.shape}
    recs = trace_records(plain, traced_dir, args.func, batch, WORDS, report)
    cons = [r for i, r in enumerate(recs) if i % WGS == 1 and r[8]]
    prod = [r for i, r in enumerate(recs) if i % WGS == 0 and r[8]]
    measured = None if args.mhz or args.sums else measured_mhz(prod)
    mhz = args.mhz or measured or NOMINAL_MHZ
    report["sm_mhz"] = round(mhz, 1)
    report["sm_mhz_measured"] = measured is not None
    us = lambda c: c / mhz
    if args.sums:
        report["phases_us_per_tile_p10_p50_p90"] = sum_stats(cons, prod, us)
    else:
        report["phases_us_p10_p50_p90"] = cta_stats(cons, prod, us, s)
    print(json.dumps(report, indent=1))
    json.dump(report, open(os.path.join(args.out, f"cta_phases_{args.func}.json"), "w"),
              indent=1)


if __name__ == "__main__":
    main()

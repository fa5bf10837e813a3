"""Where each CTA of a shared-prefix step runs, and when (issue 25 probe):
B64, prefix 32768, suffix 128 (shared_prefix_bench.py's case), the prefix
kernel P, the suffix decode A and the merge C chained as the runtime runs
them. Each kernel's PTX is rewritten so every thread, at entry and at each
`ret`, stores %globaltimer into its CTA's record (start, end: the last
launch's threads write last) and its %smid, in a module-scope array read
back after back-to-back steps; the rewritten images are assembled here
with ptxas. Prints, per kernel, the CTAs' start / end spread relative to
P's first CTA, and how many of A's CTAs started before P's last CTA ended
(on which SMs): whether the suffix runs beside the prefix kernel on the
SMs P leaves idle.

    python3 bench/gpu/probes/cascade_cta_trace.py --decode-bundle build-gpu/cascade-decode \\
        --prefill-split-bundle build-gpu/cpR-split --suffix-chunks 2 --out $OUT
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
from ptx_trace import CTA_LINEAR  # noqa: E402

SLOTS = 8192  # CTA records of 4 x u64: start, end, smid, unused
BASES = {"prefill": 0, "decode": 512, "merge": 4096}

PROLOGUE = """\t.reg .b64 %firT<4>;
\t.reg .b32 %firW<4>;
\tmov.u64 %firT0, %globaltimer;
{slot}\tst.global.u64 [%firT1], %firT0;
\tmov.u32 %firW0, %smid;
\tcvt.u64.u32 %firT0, %firW0;
\tst.global.u64 [%firT1+16], %firT0;
"""
EPILOGUE = """\tmov.u64 %firT0, %globaltimer;
{slot}\tst.global.u64 [%firT1+8], %firT0;
\tret;"""
SLOT = CTA_LINEAR + """\tadd.u32 %firW0, %firW0, {base};
\tmin.u32 %firW0, %firW0, {last};
\tmul.wide.u32 %firT1, %firW0, 32;
\tmov.u64 %firT3, fir_trace;
\tadd.u64 %firT1, %firT3, %firT1;
"""


def instrument(ptx):
    """The PTX with every entry's CTAs recorded in fir_trace (BASES by the
    kernel's kind, the last slot absorbing overflow)."""
    out, kind = [], None
    for line in ptx.split("\n"):
        m = re.match(r"\.visible \.entry (\w+)\(", line)
        if m:
            kind = next(k for k in BASES if f"_{k}_" in m.group(1))
            slot = SLOT.format(base=BASES[kind], last=SLOTS - 1)
            body_open = False
        if kind and line == "{" and not body_open:
            out.append(line)
            out.append(PROLOGUE.format(slot=slot))
            body_open = True
            continue
        if kind and body_open and line.strip() == "ret;":
            out.append(EPILOGUE.format(slot=slot))
            continue
        out.append(line)
    text = "\n".join(out)
    decl = f".global .align 8 .b64 fir_trace[{4 * SLOTS}];\n"
    first = text.index(".visible .entry")
    return text[:first] + decl + text[first:]


def traced_bundle(bundle, out_dir):
    """A copy of `bundle` whose sm_90a cubin is the instrumented PTX."""
    dst = os.path.join(out_dir, os.path.basename(bundle.rstrip("/")) + "-traced")
    return ptx_trace.traced_bundle(bundle, dst, instrument)


class Trace:
    """The fir_trace array of one loaded module."""

    def __init__(self, bundle, func):
        self.kernel, self.module = spb.load_with_module(bundle, func)
        self.ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        gc._check(gc._cuda.cuModuleGetGlobal_v2(ctypes.byref(self.ptr), ctypes.byref(size),
                                                self.module.handle, b"fir_trace"),
                  "cuModuleGetGlobal(fir_trace)")
        self.words = size.value // 8

    def reset(self):
        init = (ctypes.c_uint64 * self.words)()
        for i in range(0, self.words, 4):
            init[i] = (1 << 64) - 1
        gc._check(gc._cuda.cuMemcpyHtoD_v2(self.ptr, init, self.words * 8), "cuMemcpyHtoD")

    def read(self, kind, count):
        """(start, end, smid, linear CTA index) of the kind's CTAs that ran."""
        buf = (ctypes.c_uint64 * self.words)()
        gc._check(gc._cuda.cuMemcpyDtoH_v2(buf, self.ptr, self.words * 8), "cuMemcpyDtoH")
        base = BASES[kind]
        rows = [(buf[4 * s], buf[4 * s + 1], buf[4 * s + 2], s - base)
                for s in range(base, base + count)]
        return [r for r in rows if r[0] != (1 << 64) - 1]


def summary(rows, t0, p_end):
    starts = [(r[0] - t0) / 1000 for r in rows]
    ends = [(r[1] - t0) / 1000 for r in rows]
    during = [r for r in rows if r[0] < p_end]
    pick = lambda xs, q: round(ptx_trace.quant(xs, q), 2) if xs else None
    return {"ctas": len(rows), "sms": len({r[2] for r in rows}),
            "start_us": [pick(starts, q) for q in (0, 0.5, 1.0)],
            "end_us": [pick(ends, q) for q in (0, 0.5, 0.9, 1.0)],
            "started_before_prefix_end": len(during),
            "their_sms": sorted({r[2] for r in during})[:16]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode-bundle", required=True,
                    help="decode bundle dir; its -split-w1 sibling runs the suffix")
    ap.add_argument("--prefill-split-bundle", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--prefix-chunks", type=int, default=8)
    ap.add_argument("--suffix-chunks", type=int, default=2)
    args = ap.parse_args()
    dk = spb.load(args.decode_bundle, "plain_h32_p16")
    work = tempfile.mkdtemp()
    ts = Trace(traced_bundle(args.decode_bundle + "-split-w1", work), "plain_h32_p16")
    tp = Trace(traced_bundle(args.prefill_split_bundle, work), "plain_d128_g4_p16_bf16_fused")
    b, prefix, suffix = 64, 32768, 128
    gen = torch.Generator().manual_seed(5)
    kp, vp, q, shared, own, _ = spb.inputs(dk, b, prefix, suffix, gen)
    full = spb.batch_of(dk, q, kp, vp, [1] * b, [shared + o for o in own], [spb.PAGE] * b)
    ref_o, _ = gc.reference(dk, full)
    out, _, call = spb.cascade(ts.kernel, tp.kernel, q, kp, vp, shared, own, args.prefix_chunks,
                               prefix, [suffix] * b, overlap="chain",
                               suffix_chunks=args.suffix_chunks)
    report = {"device": torch.cuda.get_device_name()}
    # Back-to-back steps, then the records (the last step's).
    report["traced_us"] = {"chain": round(gc.time_ms(call, reps=30) * 1000, 2),
                           "prefix": round(gc.time_ms(call.prefix, reps=30) * 1000, 2)}
    plain_p = spb.load(args.prefill_split_bundle, "plain_d128_g4_p16_bf16_fused")
    _, _, plain = spb.cascade(ts.kernel, plain_p, q, kp, vp, shared, own, args.prefix_chunks,
                              prefix, [suffix] * b, overlap="chain",
                              suffix_chunks=args.suffix_chunks)
    report["untraced_prefix_us"] = round(gc.time_ms(plain.prefix, reps=30) * 1000, 2)
    print(report, flush=True)
    for mode, fn in (("chain", call), ("prefix alone", call.prefix)):
        for step in range(3):
            torch.cuda.synchronize()
            tp.reset()
            ts.reset()
            torch.cuda._sleep(2_000_000)  # the launches queue up behind it
            for _ in range(8):
                fn()
            torch.cuda.synchronize()
            p = tp.read("prefill", 512)
            a = ts.read("decode", 3584)
            c = ts.read("merge", 4095)
            t0 = min(r[0] for r in p)
            p_end = max(r[1] for r in p)
            rep = {"prefix": summary(p, t0, p_end)}
            if a:
                rep.update(suffix=summary(a, t0, p_end), merge=summary(c, t0, p_end))
            # Per prefix CTA: linear index (chunk fastest), SM, start, end (us).
            rep["prefix_ctas"] = [(r[3], r[2], round((r[0] - t0) / 1000, 2),
                                   round((r[1] - t0) / 1000, 2)) for r in p]
            report[f"{mode} step{step}"] = rep
            print(f"{mode} step {step}:",
                  json.dumps({k: v for k, v in rep.items() if k != "prefix_ctas"}), flush=True)
    rel = ((out.double() - ref_o).norm() / ref_o.norm()).item()
    report["rel_err"] = rel
    print("rel err", rel)
    json.dump(report, open(os.path.join(args.out, "cascade_cta_trace.json"), "w"), indent=1)


if __name__ == "__main__":
    main()

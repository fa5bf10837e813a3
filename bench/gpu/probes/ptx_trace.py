"""PTX rewriting shared by the timing probes (cascade_cta_trace.py,
cta_phases.py, loop_phases.py): the CTA's linear index, a warpgroup's
record, the cycle sums (start, step, store), one entry's lines, the consumers' branch of a
wgmma prefill kernel, a bundle whose sm_90a cubin is assembled from
rewritten PTX, and the quantiles the reports take. No torch and no CUDA
here, so that a rewrite can be assembled and checked on a machine without
a GPU.
"""
import json
import os
import shutil
import subprocess

# %firW0 = the CTA's linear index (x fastest); uses %firW0-3.
CTA_LINEAR = """\tmov.u32 %firW0, %ctaid.x;
\tmov.u32 %firW1, %ctaid.y;
\tmov.u32 %firW2, %nctaid.x;
\tmad.lo.u32 %firW0, %firW1, %firW2, %firW0;
\tmov.u32 %firW1, %ctaid.z;
\tmov.u32 %firW3, %nctaid.y;
\tmul.lo.u32 %firW2, %firW2, %firW3;
\tmad.lo.u32 %firW0, %firW1, %firW2, %firW0;
"""


def warpgroup_record(ctas, wgs, words):
    """%firT1 = the address of the record of `words` u64 of the CTA's
    warpgroup (`wgs` records per CTA, `ctas` CTAs) in fir_trace; %firP: the
    warpgroup's first thread. Uses %firW0-3, %firT1 and %firT3."""
    return CTA_LINEAR + f"""\tmin.u32 %firW0, %firW0, {ctas - 1};
\tmov.u32 %firW1, %tid.x;
\tshr.u32 %firW2, %firW1, 7;
\tmad.lo.u32 %firW0, %firW0, {wgs}, %firW2;
\tand.b32 %firW1, %firW1, 127;
\tsetp.eq.u32 %firP, %firW1, 0;
\tmul.wide.u32 %firT1, %firW0, {8 * words};
\tmov.u64 %firT3, fir_trace;
\tadd.u64 %firT1, %firT3, %firT1;
"""


def cycles_into(i):
    """Adds the %clock cycles since the last marker (%firS0) into %firS<i>
    and makes now the last marker. Uses %firW3-4."""
    return ("\tmov.u32 %firW4, %clock;\n\tsub.u32 %firW3, %firW4, %firS0;\n"
            f"\tadd.u32 %firS{i}, %firS{i}, %firW3;\n\tmov.u32 %firS0, %firW4;\n")


# Cycle sums (cta_phases.py --sums, loop_phases.py): %firS0 holds the last
# marker's %clock, %firS1..7 the segments' sums, %firS8 the iterations; at
# exit they leave as record words 1..7 and 11.
SUM_REGS = "\t.reg .b32 %firS<9>;\n"


def sums_init():
    """Starts the sums: now is the last marker, every sum 0."""
    return "\tmov.u32 %firS0, %clock;\n" + "".join(f"\tmov.u32 %firS{j}, 0;\n" for j in range(1, 9))


def sum_step(i):
    """Marker i (1..7): cycles_into(i); the first also counts an iteration."""
    s = cycles_into(i)
    if i == 1:
        s += "\tadd.u32 %firS8, %firS8, 1;\n"
    return s


def store_sums():
    """Stores the sums into the warpgroup's record at %firT1 (its first
    thread, %firP: warpgroup_record)."""
    return "".join(f"\tcvt.u64.u32 %firT0, %firS{j};\n\t@%firP st.global.u64 [%firT1+{8 * word}], %firT0;\n"
                   for j, word in [(j, j) for j in range(1, 8)] + [(8, 11)])


def quant(xs, q):
    """The q-quantile of `xs` (nan when empty)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def entry_span(ptx, entry):
    """(start, end, lines) of kernel `entry`'s text in `ptx`."""
    start = ptx.index(f".entry {entry}(")
    nxt = ptx.find(".entry", start + 10)
    end = ptx.rfind("\n}\n", start, len(ptx) if nxt < 0 else nxt) + 2
    return start, end, ptx[start:end].split("\n")


def splice(ptx, start, end, lines, decl):
    """`ptx` with the entry's text replaced by `lines` and the global
    declaration `decl` before the first entry."""
    text = ptx[:start] + "\n".join(lines) + ptx[end:]
    first = text.index(".visible .entry")
    return text[:first] + decl + text[first:]


def consumer_lines(lines):
    """The consumers' branch: from setmaxnreg.inc to the producer's
    setmaxnreg.dec or the end."""
    inc = next(i for i, l in enumerate(lines) if "setmaxnreg.inc" in l)
    dec = next(i for i, l in enumerate(lines) if "setmaxnreg.dec" in l)
    return inc, dec if dec > inc else len(lines)


def traced_bundle(bundle, dst, rewrite, ptxas="ptxas", verbose=False):
    """A copy of `bundle` at `dst` whose sm_90a PTX is rewrite(PTX) and
    whose cubin is assembled from it."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(bundle, dst)
    manifest = json.load(open(os.path.join(dst, "manifest.json")))
    target = [t for t in manifest["targets"] if t["chip"] == "sm_90a"][0]
    ptx_path = os.path.join(dst, target["ptx"])
    with open(ptx_path) as f:
        ptx = rewrite(f.read())
    with open(ptx_path, "w") as f:
        f.write(ptx)
    subprocess.run([ptxas] + (["-v"] if verbose else []) +
                   ["-arch=sm_90a", ptx_path, "-o", os.path.join(dst, target["cubin"])],
                   check=True)
    return dst

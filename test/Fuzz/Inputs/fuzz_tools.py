#!/usr/bin/env python3
"""Fuzz campaign over FlashIR's tools (what found issue 22's defects).

Usage: fuzz_tools.py BIN_DIR SRC_ROOT [--runs N] [--jobs J] [--timeout S]

Four campaigns, deterministic (fixed seed), each run in its own process:

  pipelines  test inputs (split at `// -----`), also as two sibling modules
             and with static shapes made huge (2^31 - 1, 2^32, 2^40), through
             flashir-opt pipelines and passes;
  options    pass options at extreme values (0, -1, 2^31 - 1, 2^63 - 1,
             -2^63, odd sizes) on programs with attention ops;
  run        flashir-run command lines with extreme and random sizes;
  bundle     flashir-bundle on the examples, as sibling modules, with
             extreme options.

Every run must exit 0, or exit non-zero (flashir-opt/-bundle: 1; flashir-run:
1 for a command-line error, 2 for a usage error) with a diagnostic; a
signal, a timeout, "LLVM ERROR", a stack dump or a flashir-run numerics
FAIL is a failure. Prints one line per campaign and `F failures`; exits 1 on
any failure, listing each with its command line.
"""

import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile

BIG = ["2147483647", "4294967296", "1099511627776"]
EXTREME_INTS = ["0", "-1", "1", "3", "7", "2147483647", "9223372036854775807",
                "-9223372036854775808", "4294967297"]
# convert-attn-to-gpu's enum options: every value, an unknown one, a number.
DESIGNS = ["auto", "simt", "mma-sync", "tensor", "1"]
COPIES = ["auto", "cp-async", "bulk", "tma", "tensor", "-1"]


def chunks_of(path):
    with open(path) as f:
        text = f.read()
    return [c for c in text.split("// -----") if c.strip()]


def strip_comments(text):
    return "\n".join(l for l in text.splitlines()
                     if not l.lstrip().startswith("//"))


ALIAS_RE = re.compile(r"^\s*[!#][\w.$]+\s*=")


def siblings(chunk, copies=2):
    """The chunk `copies` times, as sibling modules (type and attribute
    aliases stay at the top level, where they must be): the threaded verifier
    checks them at once."""
    lines = strip_comments(chunk).splitlines()
    aliases = "\n".join(l for l in lines if ALIAS_RE.match(l))
    body = "\n".join(l for l in lines if not ALIAS_RE.match(l))
    return aliases + "\n" + f"module {{\n{body}\n}}\n" * copies


DIM_RE = re.compile(r"(?<=[<x])\d+(?=x)")


def huge_shapes(chunk, rng):
    dims = list(DIM_RE.finditer(chunk))
    if not dims:
        return None
    out, last = [], 0
    for m in dims:
        out.append(chunk[last:m.start()])
        out.append(rng.choice(BIG) if rng.random() < 0.5 else m.group(0))
        last = m.end()
    out.append(chunk[last:])
    return "".join(out)


PIPELINES = [
    "--attn-import-variants", "--canonicalize", "--attn-schedule",
    "--attn-compose-prefix", "--attn-fuse-head-groups", "--attn-split-kv",
    "--attn-select-tiles", "--attn-raise-from-linalg",
    "--attn-raise-from-linalg=paged-kv=1", "--convert-attn-to-loops",
    "--attn-to-loops", "--attn-to-cpu", "--convert-attn-to-gpu",
    "--pass-pipeline=builtin.module(attn-import-variants,canonicalize,"
    "symbol-dce)",
]


def pipeline_cases(src, rng, n):
    seeds = []
    for sub in ["test/Dialect/Attn", "test/Conversion/AttnToLoops",
                "test/Conversion/AttnToGPU", "examples"]:
        d = os.path.join(src, sub)
        for name in sorted(os.listdir(d)):
            if name.endswith(".mlir"):
                seeds += chunks_of(os.path.join(d, name))
    cases = []
    for _ in range(n):
        chunk = rng.choice(seeds)
        form = rng.choice(["plain", "siblings", "huge", "huge-siblings"])
        text = chunk
        if form.startswith("huge"):
            text = huge_shapes(chunk, rng) or chunk
        if form.endswith("siblings"):
            text = siblings(text, rng.randint(2, 8))
        cases.append(("flashir-opt", [rng.choice(PIPELINES)], text, form))
    return cases


def option_cases(src, rng, n):
    seeds = chunks_of(os.path.join(src, "examples/decode_gqa.mlir")) + \
        chunks_of(os.path.join(src, "examples/decode_paged.mlir"))
    for name in ["split-kv.mlir", "select-tiles.mlir", "compose-prefix.mlir"]:
        seeds += chunks_of(os.path.join(src, "test/Dialect/Attn", name))
    passes = {
        "attn-split-kv": ["chunk-size"],
        "attn-select-tiles": ["avg-qo-len", "q-tile", "kv-tile", "tile-warps",
                              "tile-stages"],
        "convert-attn-to-gpu": ["warps", "unroll", "stages", "min-blocks",
                                "design", "copy"],
        "attn-to-ptx": ["warps", "unroll", "stages", "min-blocks",
                        "design", "copy"],
    }
    values = {"design": DESIGNS, "copy": COPIES}
    chips = ["sm_75", "sm_80", "sm_90a", "sm_0", "sm_9999", "x"]
    cases = []
    for _ in range(n):
        name = rng.choice(sorted(passes))
        opts = [f"{o}={rng.choice(values.get(o, EXTREME_INTS))}"
                for o in rng.sample(passes[name],
                                    rng.randint(1, len(passes[name])))]
        # attn-split-kv has no chip option; the others get a random one half
        # of the time, else sm_80 (attn-to-ptx needs one named).
        if name != "attn-split-kv":
            chip = rng.choice(chips) if rng.random() < 0.5 else "sm_80"
            opts.append(f"chip={chip}")
        pipeline = f"builtin.module({name}{{{' '.join(opts)}}})"
        if name == "convert-attn-to-gpu":
            pipeline = f"builtin.module(attn-import-variants,{name}" \
                       f"{{{' '.join(opts)}}})"
        cases.append(("flashir-opt", [f"--pass-pipeline={pipeline}"],
                      rng.choice(seeds), "options"))
    return cases


def run_cases(rng, n):
    sizes = {
        "--head-dim": ["2", "4", "8", "64", "1024", "1026", "0", "-2", "3",
                       "2147483648"],
        "--qo-heads": ["1", "2", "4", "1024", "1025", "0",
                       "9223372036854775807"],
        "--kv-heads": ["1", "2", "3", "0", "-1", "2147483647"],
        "--page-size": ["1", "2", "16", "65536", "65537", "0",
                        "2147483647"],
        "--views": ["1", "2", "3", "64", "65", "0", "2147483647"],
        "--prefix-len": ["0", "1", "17", "1048577", "2147483647"],
    }
    lens = ["0", "1", "2", "5", "17", "1048577", "2147483647", "-1"]
    cases = []
    for _ in range(n):
        args = []
        for opt in rng.sample(sorted(sizes), rng.randint(1, 3)):
            args.append(f"{opt}={rng.choice(sizes[opt])}")
        b = rng.randint(1, 3)
        args.append("--qo-lens=" + ",".join(
            rng.choice(lens[:5] if rng.random() < 0.7 else lens)
            for _ in range(b)))
        args.append("--kv-lens=" + ",".join(
            rng.choice(lens[:5] if rng.random() < 0.7 else lens)
            for _ in range(b if rng.random() < 0.9 else b + 1)))
        if rng.random() < 0.3:
            args.append(f"--layout={rng.choice(['nhd', 'hnd', 'ragged'])}")
        if rng.random() < 0.3:
            args.append(f"--mode={rng.choice(['direct', 'merge'])}")
        if rng.random() < 0.3:
            args.append(f"--variant={rng.choice(['plain', 'causal', 'sigmoid', 'alibi', 'soft_cap', 'sliding_window', 'custom_mask', 'nope'])}")
        if rng.random() < 0.2:
            args.append(f"--dtype={rng.choice(['f16', 'bf16', 'f64'])}")
        if rng.random() < 0.2:
            args.append("--transform=" + rng.choice([
                "attn-split-kv{chunk-size=3}", "attn-split-kv{chunk-size=0}",
                "attn-fuse-head-groups", "attn-to-cpu", "attn-to-loops",
                "convert-attn-to-gpu", "attn-schedule", "bogus"]))
        cases.append(("flashir-run", args, None, "run"))
    return cases


def bundle_cases(src, rng, n):
    seeds = [open(os.path.join(src, "examples", f)).read()
             for f in ["decode_gqa.mlir", "decode_paged.mlir"]]
    for name in ["ops.mlir", "canonicalize.mlir", "split-kv.mlir"]:
        seeds += chunks_of(os.path.join(src, "test/Dialect/Attn", name))
    opts = {
        "--warps": EXTREME_INTS, "--unroll": EXTREME_INTS,
        "--stages": EXTREME_INTS, "--min-blocks": EXTREME_INTS,
        "--design": DESIGNS, "--copy": COPIES,
        "--schedule": ["attn-split-kv{chunk-size=0}", "bogus(",
                       "attn-split-kv{chunk-size=-5}", "attn-to-cpu"],
    }
    cases = []
    for _ in range(n):
        text = rng.choice(seeds)
        form = rng.choice(["plain", "siblings", "huge"])
        if form == "siblings":
            text = siblings(text, rng.randint(2, 8))
        elif form == "huge":
            text = huge_shapes(text, rng) or text
        args = ["--chips=" + rng.choice(["sm_80", "sm_90a", "sm_75", "sm_1"])]
        for o in rng.sample(sorted(opts), rng.randint(0, 2)):
            args.append(f"{o}={rng.choice(opts[o])}")
        cases.append(("flashir-bundle", args, text, "bundle-" + form))
    return cases


def verdict(tool, rc, out):
    if rc is None:
        return "timeout"
    if rc < 0 or rc >= 128:
        return f"signal/status {rc}"
    if "LLVM ERROR" in out or "PLEASE submit a bug report" in out or \
            "Stack dump" in out:
        return "LLVM ERROR or stack dump"
    # Sanitizer builds exit 1 on a report.
    if "Sanitizer" in out or "runtime error:" in out:
        return "sanitizer report"
    if rc == 0:
        return None
    if tool == "flashir-run":
        if "FAIL (rtol" in out:
            return "numerics FAIL"
        if rc in (1, 2) and "flashir-run" in out:
            return None
        return f"status {rc} without a diagnostic"
    if rc == 1 and ("error" in out or f"{tool}:" in out):
        return None
    return f"status {rc} without a diagnostic"


def execute(case, bin_dir, timeout, workdir):
    tool, args, text, form = case
    cmd = [os.path.join(bin_dir, tool)]
    path = None
    if text is not None:
        fd, path = tempfile.mkstemp(suffix=".mlir", dir=workdir)
        with os.fdopen(fd, "w") as f:
            f.write(text)
    if tool == "flashir-opt":
        cmd += [path, "-o", os.devnull] + args
    elif tool == "flashir-bundle":
        cmd += [path, "-o", path + ".bundle"] + args
    else:
        cmd += args
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout, errors="replace")
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, out = None, ""
    bad = verdict(tool, rc, out)
    if bad and path:
        keep = path + ".failing.mlir"
        os.rename(path, keep)
        path = keep
    return case, bad, " ".join(cmd), out[-600:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin_dir")
    ap.add_argument("src_root")
    ap.add_argument("--runs", type=int, default=200,
                    help="runs per campaign")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--workdir", default=None)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    campaigns = {
        "pipelines": pipeline_cases(a.src_root, rng, a.runs),
        "options": option_cases(a.src_root, rng, a.runs),
        "run": run_cases(rng, a.runs),
        "bundle": bundle_cases(a.src_root, rng, a.runs // 2),
    }
    workdir = a.workdir or tempfile.mkdtemp(prefix="flashir-fuzz-")
    os.makedirs(workdir, exist_ok=True)
    failures = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for name, cases in campaigns.items():
            results = list(pool.map(
                lambda c: execute(c, a.bin_dir, a.timeout, workdir), cases))
            ok = sum(1 for _, bad, _, _ in results if bad is None)
            print(f"{name}: {len(results)} runs, {ok} succeeded or "
                  f"diagnosed, {len(results) - ok} failed")
            failures += [(name,) + r for r in results if r[1]]
    for name, case, bad, cmd, out in failures:
        print(f"FAILURE [{name}/{case[3]}] {bad}: {cmd}\n{out}",
              file=sys.stderr)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

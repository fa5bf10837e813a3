#!/usr/bin/env python3
"""Malformed-input robustness test for flashir-opt.

Usage: mutate.py FLASHIR_OPT SEED.mlir [SEED.mlir ...] [options]

Generates deterministic mutants of each seed (truncations, token deletions /
duplications / swaps, number replacements, keyword and type swaps, removed
`attn.yield`s), runs flashir-opt on each and checks that

  * the process is never killed by a signal (return code < 0 or >= 128),
    never hangs, and
  * a mutant that is rejected exits with status 1 and reports `error:`.

Mutants that are accepted are printed by flashir-opt; that output is parsed
again and run through `--attn-import-variants`, which must not crash either.

flashir-opt starts slowly (registering every upstream dialect and pass costs
~0.1 s, far more than parsing a mutant), so mutants are run in batches through
`-split-input-file`: every chunk is parsed and verified in a fresh MLIRContext,
its diagnostics carry line numbers of the batch, and the output of a rejected
chunk is empty. A rejected chunk must have an `error:` located inside it. Any
batch that is killed, hangs or cannot be attributed chunk by chunk is re-run
one mutant per process, and a deterministic sample of mutants is always run
one per process as well, checking the exit status directly (and that it agrees
with the batched verdict). `--no-batch` runs every mutant in its own process.

Prints `N mutants, M rejected, C crashes` and a line of other failures; exits
non-zero on any crash or failure.
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

SPLIT = "// -----"

# --------------------------------------------------------------------------
# Mutant generation
# --------------------------------------------------------------------------

TOKEN_RE = re.compile(
    r"""
      (?P<comment>//[^\n]*)
    | (?P<string>"(?:[^"\\\n]|\\.)*")
    | (?P<number>0x[0-9A-Fa-f]+|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    | (?P<word>[%@^#!]?[A-Za-z_$][\w.$]*|%\d+)
    | (?P<arrow>->)
    | (?P<punct>[^\s\w])
    """,
    re.VERBOSE,
)

# Standalone numbers (not part of an identifier such as `x16x8` or `%arg0`).
NUMBER_RE = re.compile(r"(?<![\w.%#@$])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
# Static dimensions inside shapes: `tensor<?x16x8x128xf16>`.
DIM_RE = re.compile(r"(?<=[<x])\d+(?=x)")

NUMBER_REPLACEMENTS = [
    "0",
    "-1",
    "99999999999999999999999",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967297",
    "1.0e+400",
]
DIM_REPLACEMENTS = ["0", "1", "3", "9223372036854775807"]

# (old, new): each occurrence of `old` replaced on its own, and all at once.
SWAPS = [
    ("f16", "i8"), ("f16", "f64"), ("bf16", "f16"), ("f32", "i1"),
    ("f32", "f16"), ("i32", "i64"), ("i32", "f32"), ("i1", "i32"),
    ("i8", "f32"), ("index", "f32"), ("index", "i64"), ("nhd", "xyz"),
    ("nhd", "hnd"), ("hnd", "nhd"), ("softmax", "sparsemax"),
    ("softmax", "bogus"), ("sigmoid", "sparsemax"),
    ("per_request", "per_head"), ("per_head", "buffer"),
    ("scalar", "buffer"), ("buffer", "scalar"), ("per_request", "xyz"),
    ("tensor", "vector"), ("tensor", "memref"), ("attn.yield", "func.return"),
    ("attn.yield", "llvm.unreachable"), ("attn.merge", "attn.finalize"),
    ("attn.paged_kv", "attn.ragged_kv"), ("attn.ragged_q", "attn.ragged_kv"),
    ("attn.attention", "attn.merge"), ("attn.make_state", "attn.empty_state"),
    ("attn.variant", "func.func"), ("heads", "head_dim"),
    ("head_dim", "heads"), ("page_size", "heads"), ("layout", "page_size"),
    ("query", "key"), ("mask", "logits"), ("logits", "output"),
    ("output", "mask"), ("key", "query"), ("@causal", "@sparse"),
    ("@causal", "@nope"), ("@everything", "@paged_nhd"),
    ("@plain", "@sigmoid"), ("@sliding_window", "@alibi"),
    ("@sparse", "@everything"), ("num_qo_heads", "num_kv_heads"),
    ("num_kv_heads", "scale"), ("scale", "num_qo_heads"), ("?x", "0x"),
    ("?x", "1x"), ("xf32>", "x?xf32>"), (": i64", ": i32"),
    (": f32", ": f64"), ("reduction", "params"), ("params", "reduction"),
    ("arith.cmpi", "arith.addi"), ("%q", "%k"), ("%kv", "%q"), ("%s", "%o"),
    ("!attn.state", "!attn.ragged_q"), ("!attn.paged_kv", "!attn.ragged_kv"),
    ("!attn.ragged_kv", "!attn.paged_kv"), ("!attn.ragged_q", "!attn.state"),
    ("#attn.param", "#attn.layout"), ("#attn.layout", "#attn.reduction"),
    ("{", "("), ("(", "<"), (">", ")"), (",", ""), (":", ","),
    ("->", ","), ("=", ":"),
]


def spread(items, cap):
    """At most `cap` items of `items`, evenly spaced (deterministic)."""
    if len(items) <= cap:
        return list(items)
    return [items[i * len(items) // cap] for i in range(cap)]


def word_pattern(old):
    # A word stands alone, or is an element type at the end of a shape
    # (`tensor<?x8xf16>`).
    left = (r"(?:(?<![\w.%@!#])|(?<=[\d?]x))" if re.match(r"[\w%@!#]", old)
            else "")
    right = r"(?![\w.])" if re.search(r"\w$", old) else ""
    return re.compile(left + re.escape(old) + right)


def generate(name, text, scale):
    """Yields (description, mutant) for one seed."""
    def cap(n):
        return max(1, int(n * scale))

    n = len(text)

    # Truncation at every Nth character.
    stride = max(1, n // cap(300))
    for cut in range(0, n, stride):
        yield f"{name}: truncated at {cut} (every {stride})", text[:cut]

    # Truncation just before and just after structural characters.
    cuts = sorted({c for i, ch in enumerate(text) if ch in "{(<:=>)}"
                   for c in (i, i + 1)})
    for cut in spread(cuts, cap(350)):
        yield f"{name}: truncated at {cut} ({text[max(0, cut - 1):cut + 1]!r})", text[:cut]

    # Token deletion, duplication, swap with the next token.
    tokens = [m for m in TOKEN_RE.finditer(text) if m.lastgroup != "comment"]
    for i, m in enumerate(spread(tokens, cap(220))):
        a, b = m.span()
        yield f"{name}: deleted token {m.group()!r} at {a}", text[:a] + text[b:]
    for m in spread(tokens[1::2], cap(180)):
        a, b = m.span()
        yield (f"{name}: duplicated token {m.group()!r} at {a}",
               text[:b] + " " + m.group() + text[b:])
    pairs = list(zip(tokens, tokens[1:]))
    for m1, m2 in spread(pairs[1::3], cap(180)):
        a1, b1 = m1.span()
        a2, b2 = m2.span()
        yield (f"{name}: swapped tokens {m1.group()!r} and {m2.group()!r} at {a1}",
               text[:a1] + m2.group() + text[b1:a2] + m1.group() + text[b2:])

    # Numbers replaced by 0, -1, huge values.
    numbers = [m for m in NUMBER_RE.finditer(text)
               if not _in_comment(text, m.start())]
    per = max(1, cap(260) // len(NUMBER_REPLACEMENTS))
    for m in spread(numbers, per):
        a, b = m.span()
        for r in NUMBER_REPLACEMENTS:
            yield f"{name}: number {m.group()!r} at {a} -> {r}", text[:a] + r + text[b:]
    dims = [m for m in DIM_RE.finditer(text) if not _in_comment(text, m.start())]
    per = max(1, cap(120) // len(DIM_REPLACEMENTS))
    for m in spread(dims, per):
        a, b = m.span()
        for r in DIM_REPLACEMENTS:
            yield f"{name}: dimension {m.group()!r} at {a} -> {r}", text[:a] + r + text[b:]

    # Keyword / type / symbol swaps: each occurrence, and all occurrences.
    for old, new in SWAPS:
        pat = word_pattern(old)
        occ = [m for m in pat.finditer(text) if not _in_comment(text, m.start())]
        if not occ:
            continue
        yield f"{name}: every {old!r} -> {new!r}", pat.sub(new, text)
        for m in spread(occ, cap(4)):
            a, b = m.span()
            yield f"{name}: {old!r} at {a} -> {new!r}", text[:a] + new + text[b:]

    # Removed terminators.
    yield_re = re.compile(r'^[ \t]*"?attn\.yield[^\n]*\n', re.M)
    yields = list(yield_re.finditer(text))
    for m in yields:
        a, b = m.span()
        yield f"{name}: removed attn.yield at {a}", text[:a] + text[b:]
    if yields:
        yield (f"{name}: removed every attn.yield",
               yield_re.sub("", text))


def _in_comment(text, pos):
    line_start = text.rfind("\n", 0, pos) + 1
    return "//" in text[line_start:pos]


# --------------------------------------------------------------------------
# Running flashir-opt
# --------------------------------------------------------------------------

# Follow-up runs on the mutants flashir-opt accepts (each must accept them again).
FOLLOWUP_FLAGS = [
    ["--verify-roundtrip"],
    ["--attn-import-variants", "--canonicalize"],
]

ERROR_LINE_RE = re.compile(r"^<stdin>:(\d+):\d+: error:", re.M)


class Result:
    def __init__(self, desc, text):
        self.desc, self.text = desc, text
        self.rejected = None  # bool once known
        self.output = None    # printed IR of an accepted mutant (batched runs)
        self.problems = []    # strings; a non-empty list is a failure
        self.crashed = False


def is_crash(rc):
    return rc < 0 or rc >= 128


def run_opt(opt, args, text, timeout):
    """Returns (rc, stdout, stderr); rc None on timeout."""
    try:
        p = subprocess.run([opt] + args + ["-"], input=text.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", ""
    return (p.returncode, p.stdout.decode(errors="replace"),
            p.stderr.decode(errors="replace"))


def check_single(opt, res, timeout, extra_args=()):
    """Runs one mutant in its own process and records what went wrong."""
    rc, _, err = run_opt(opt, list(extra_args), res.text, timeout)
    tag = " ".join(extra_args) or "parse"
    if rc is None:
        res.problems.append(f"[{tag}] timed out after {timeout} s")
        return None
    if is_crash(rc):
        res.crashed = True
        res.problems.append(f"[{tag}] killed: return code {rc}\n{err[-3000:]}")
        return rc
    if rc != 0 and rc != 1:
        res.problems.append(f"[{tag}] unexpected exit status {rc}")
    if rc != 0 and "error:" not in err:
        res.problems.append(f"[{tag}] exit status {rc} without 'error:' on stderr")
    return rc


def run_batch(opt, batch, timeout, single_timeout, extra_args=()):
    """Runs `batch` (list of Result) through -split-input-file and classifies
    every mutant. Falls back to one process per mutant when needed."""
    pieces, starts, line = [], [], 1
    for res in batch:
        starts.append(line)
        pieces.append(res.text)
        line += res.text.count("\n") + 1  # the "\n" before the marker
        line += 1                          # the marker line
    text = ("\n" + SPLIT + "\n").join(pieces)
    rc, out, err = run_opt(opt, ["-split-input-file"] + list(extra_args), text,
                           timeout)

    fallback = rc is None or is_crash(rc) or rc not in (0, 1)
    outs = out.split(SPLIT + "\n") if not fallback else []
    if not fallback and len(outs) != len(batch):
        fallback = True
    if not fallback:
        error_lines = [int(l) for l in ERROR_LINE_RE.findall(err)]
        any_rejected = False
        for i, res in enumerate(batch):
            rejected = not outs[i].strip()
            lo = starts[i]
            hi = starts[i + 1] - 1 if i + 1 < len(batch) else line
            has_error = any(lo <= l <= hi for l in error_lines)
            if rejected and not has_error:
                # Cannot attribute an error to this chunk: check it alone.
                rc1 = check_single(opt, res, single_timeout, extra_args)
                rejected = rc1 != 0
            res.rejected = rejected
            res.output = None if rejected else outs[i]
            any_rejected |= rejected
        if rc == 1 and not any_rejected:
            fallback = True
        elif rc == 0 and any_rejected:
            for res in batch:
                if res.rejected:
                    res.problems.append("rejected in a batch that exited with 0")
    if fallback:
        for res in batch:
            res.problems.clear()
            res.crashed = False
            rc1 = check_single(opt, res, single_timeout, extra_args)
            res.rejected = rc1 != 0
            res.output = None
    return batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("opt", help="path to flashir-opt")
    ap.add_argument("seeds", nargs="+", help="seed .mlir files")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiplies the number of mutants per class")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--sample-every", type=int, default=40,
                    help="also run every Nth mutant in its own process")
    ap.add_argument("--no-batch", action="store_true",
                    help="run every mutant in its own process (slow)")
    ap.add_argument("--timeout", type=float, default=20.0,
                    help="seconds per single-mutant run")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--min-mutants", type=int, default=0,
                    help="fail if fewer mutants are generated")
    ap.add_argument("--show", type=int, default=5,
                    help="print the text of at most this many failing mutants")
    args = ap.parse_args()

    mutants, seen = [], set()
    for path in args.seeds:
        with open(path) as f:
            text = f.read()
        name = os.path.basename(path)
        seen.add(text)
        for desc, m in generate(name, text, args.scale):
            if m in seen or SPLIT in m:
                continue
            seen.add(m)
            mutants.append(Result(desc, m))

    results = mutants
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        if args.no_batch:
            list(pool.map(lambda r: (r, setattr(r, "rejected", check_single(
                args.opt, r, args.timeout) != 0)), results))
        else:
            batches = [results[i:i + args.batch_size]
                       for i in range(0, len(results), args.batch_size)]
            batch_timeout = args.timeout * 3
            list(pool.map(lambda b: run_batch(args.opt, b, batch_timeout,
                                              args.timeout), batches))

            # One process per mutant for a deterministic sample: the exit
            # status itself, and agreement with the batched verdict.
            sample = results[::max(1, args.sample_every)]

            def check_sample(res):
                probe = Result(res.desc, res.text)
                rc = check_single(args.opt, probe, args.timeout)
                res.problems += probe.problems
                res.crashed |= probe.crashed
                if rc is not None and (rc != 0) != res.rejected:
                    res.problems.append(
                        f"batched verdict ({'rejected' if res.rejected else 'accepted'}) "
                        f"differs from a single run (exit status {rc})")
            list(pool.map(check_sample, sample))

            # Accepted mutants: their printed form must parse again, and the
            # import pass must not crash on them.
            accepted = [Result(r.desc + " (printed, re-parsed)", r.output)
                        for r in results if not r.rejected and r.output]
            followups = [(accepted, [])]
            for flags in FOLLOWUP_FLAGS:
                followups.append(([Result(f"{r.desc} ({' '.join(flags)})", r.text)
                                   for r in results if not r.rejected], flags))
            jobs = [pool.submit(run_batch, args.opt, group[i:i + args.batch_size],
                                batch_timeout, args.timeout, flags)
                    for group, flags in followups
                    for i in range(0, len(group), args.batch_size)]
            for job in jobs:
                job.result()
            for group, flags in followups:
                for r in group:
                    if r.rejected:
                        r.problems.append("an accepted mutant is rejected by "
                                          + (" ".join(flags) or "a re-parse of its printed form"))
                results = results + group

    crashes = [r for r in results if r.crashed]
    failures = [r for r in results if r.problems and not r.crashed]
    shown = 0
    for r in crashes + failures:
        kind = "CRASH" if r.crashed else "FAILURE"
        print(f"{kind}: {r.desc}")
        for p in r.problems:
            print("  " + p.replace("\n", "\n  "))
        if shown < args.show:
            shown += 1
            print("  --- mutant ---")
            print("  " + r.text.replace("\n", "\n  "))
            print("  --- end of mutant ---")

    rejected = sum(1 for r in mutants if r.rejected)
    print(f"{len(mutants)} mutants, {rejected} rejected, {len(crashes)} crashes")
    print(f"{len(failures)} other failures")
    if len(mutants) < args.min_mutants:
        print(f"error: only {len(mutants)} mutants, expected at least "
              f"{args.min_mutants}")
        return 1
    return 1 if crashes or failures else 0


if __name__ == "__main__":
    sys.exit(main())

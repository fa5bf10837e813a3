"""Shared-prefix (cascade) decoding on the GPU machine (issue 7, item 3):
B requests decode one token each over a prefix of P tokens they all share
(the same page ids) plus their own suffix of S tokens; bf16, Hq 32 / Hkv 8,
d 128, page 16.

- not composed: the decode kernel over each request's whole page list (the
  prefix is read once per request), the fastest of the decode bundle's
  kernel (4 warps per CTA) and those of --plain-bundles (default
  DECODE_BUNDLE-w2: 2 warps per CTA);
- composed, FlashIR kernels only (with the split-KV bundles): the split-KV
  prefill kernel (fused head groups) over the prefix in C chunks for all B
  query rows, the split-KV decode kernel over each suffix (default
  DECODE_BUNDLE-split-w1: one warp per CTA, which suits 128-key suffixes),
  and the decode merge kernel merging each request's C + 1 states, all
  through chunk metadata (see cascade()); the same with the suffix kernel on
  a second stream next to the prefix kernel (composed_overlap; other chunk
  counts and launch orders too), chained on one stream with
  programmatic launches (composed_chain), and the same with the prefix
  kernel launched programmatically too, behind the previous step
  (composed_chain_pdl, as the runtime does with sm_90 bundles), and that
  with each suffix in S chunks for each S of --suffix-chunks
  (composed_chain_pdl_sS; the kernels' other paths take one); and the
  same through the runtime
  (flashir.SharedPrefixRunner, where libflashir_c.so is built, which plans
  S itself, with each kernel's device time from torch.profiler; and with
  each suffix bundle of --runtime-split-bundles, e.g. an experiment's);
- composed with a PyTorch merge: the unsplit prefill kernel with the C
  chunks as C "requests" of B rows, the decode kernel, then PyTorch ops for
  the merge of the C + 1 states (eq. 6; the earlier form);
- policy: composed (the fastest composition) or not, whichever is faster
  (what a runtime would choose per batch).

Both are timed end to end on the GPU (every kernel and the merge); the
composed output is compared with the float64 reference and with the
uncomposed one.

    python3 bench/gpu/shared_prefix_bench.py --decode-bundle build-gpu/bundle \\
        --prefill-bundle build-gpu/bundle-prefill --out $OUT
    (other bundles: build-gpu/bundle-split-w1, build-gpu/bundle-w2,
    build-gpu/bundle-prefill-split; scripts/gpu-bundle.sh builds them)
"""

import argparse
import contextlib
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check as gc  # noqa: E402

PAGE = 16


def load_with_module(bundle, func):
    """(kernel of attention `func`, its loaded sm_90a module) of `bundle`."""
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    target = [t for t in manifest["targets"] if t["chip"] == "sm_90a"][0]
    module = gc.Module(open(os.path.join(bundle, target["cubin"]), "rb").read())
    kernels = gc.load_kernels(manifest, module, "sm_90a")
    return [k for n, k in kernels.items() if n.rsplit("_", 2)[0] == func][0], module


def load(bundle, func):
    return load_with_module(bundle, func)[0]


def batch_of(k, q, kp, vp, qo_lens, page_lists, last_lens):
    """A gpu_check batch over existing pools and queries."""
    i32 = lambda x: torch.tensor(x if x else [0], dtype=torch.int32, device="cuda")
    indptr, indices = [0], []
    for pages in page_lists:
        indices += pages
        indptr.append(len(indices))
    qo = [0]
    for n in qo_lens:
        qo.append(qo[-1] + n)
    kv_lens = [(len(p) - 1) * PAGE + last if p else 0 for p, last in zip(page_lists, last_lens)]
    return dict(q=q, qo=i32(qo), kp=kp, vp=vp, indptr=i32(indptr), indices=i32(indices),
                last=i32(last_lens), qo_lens=qo_lens, kv_lens=kv_lens, indptr_l=indptr,
                indices_l=indices, params=[])


def merge(o, lse):
    """States o [n, B, H, D] / lse [n, B, H] (natural log) merged along n
    (eq. 6): one weighted sum over the n states of each (row, head)."""
    m = lse.amax(dim=0)
    m_safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    w = torch.exp(lse - m_safe)
    total = w.sum(dim=0)
    v = (o.float() * w[..., None]).sum(dim=0) / total.clamp_min(1e-30)[..., None]
    return v, m_safe + torch.log(total)


def cascade(sk, spk, q, kp, vp, shared, own, prefix_chunks, prefix_len, suffix_lens,
            overlap=False, suffix_chunks=1):
    """The composition with FlashIR kernels only: the split-KV prefill kernel
    (fused head groups) writes each prefix chunk's state (O in bf16, lse in
    f32) for every query row, the split-KV decode kernel each request's
    suffix state, and the decode merge kernel merges the Cp + 1 states per
    request. No copies: the
    chunk metadata puts them side by side. With C = Cp + 1, the prefill
    kernel (one request of B rows, Cp chunks, plus the padding request's
    empty chunk Cp, never launched) writes chunk k of row r at partial row
    k + C r; the decode side gives request r the chunks [C r, C r + C), of
    which only C r + Cp (its suffix) is launched (chunk_order), at partial
    row C r + Cp (row 0 of a one-row request); its merge kernel reads rows
    [C r, C r + C). Every request has C > 1 chunks, so no kernel writes
    `out` directly but the merge. With `overlap` the suffix kernel runs on a
    second stream, forked before and joined after the prefix kernel (it
    reads no prefix state), so the two share the GPU. Returns (out, lse,
    call). With `suffix_chunks` S > 1 each suffix is S chunks (C = Cp + S),
    each of a CTA: the suffix kernel's CTAs are latency-bound, each walking
    its keys tile by tile."""
    b, hq, d = q.shape
    sc = suffix_chunks
    cp, c = prefix_chunks, prefix_chunks + sc
    assert cp >= 2  # one prefix chunk would be written to `out` directly
    dev = "cuda"
    i32 = lambda x: torch.tensor(x, dtype=torch.int32, device=dev)
    part_o = torch.full((c * b, hq, d), float("nan"), dtype=q.dtype, device=dev)
    part_lse = torch.full((c * b, hq), float("nan"), device=dev)
    out = torch.full((b, hq, d), float("nan"), dtype=q.dtype, device=dev)
    lse = torch.full((b, hq), float("nan"), device=dev)
    per = -(-prefix_len // cp)
    # Prefix: request 0 = B rows over the shared pages; request 1 pads.
    pre = dict(qo=i32([0, b, b]), indptr=i32([0, len(shared), len(shared)]),
               indices=i32(shared), last=i32([PAGE, PAGE]),
               cindptr=i32([0, cp, c]), creq=i32([0] * cp + [1] * sc),
               cstart=i32([k * per for k in range(cp)] + [0] * sc),
               cend=i32([min(prefix_len, (k + 1) * per) for k in range(cp)] + [0] * sc),
               order=i32(list(range(c))))
    dummy_o = torch.empty((1, hq, d), dtype=q.dtype, device=dev)
    dummy_l = torch.empty((1, hq), device=dev)
    pmaps = gc.kv_maps(spk, kp, vp)
    args = []
    for t in (q, pre["qo"], kp, vp, pre["indptr"], pre["indices"], pre["last"], pre["cindptr"],
              pre["creq"], pre["cstart"], pre["cend"], pre["order"], part_o, part_lse,
              dummy_o, dummy_l, pmaps):
        args += gc.memref_args(t)
    # overlap: "suffix-first" (the suffix kernel launched before the prefix
    # kernel on a second stream), "prefix-first", "suffix-first-hi" (suffix
    # first on a high-priority stream: its CTAs are dispatched ahead of the
    # prefix's), "suffix-main" (the suffix on this stream, the prefix on the
    # second: the suffix starts first, without an event wait before it),
    # "chain" (one stream: the suffix launched behind the prefix kernel and
    # the merge behind the suffix, both with programmatic stream
    # serialization: the suffix's CTAs start as soon as the prefix kernel's
    # have, its last CTA waits for the prefix kernel before leaving, and the
    # merge's CTAs wait for the suffix grid -- no second stream, no events,
    # and the merge's launch hides behind the suffix), "prefix-first-pdl"
    # (prefix-first with the merge launched programmatically behind the
    # prefix kernel: it waits for that kernel, the suffix by the join event),
    # "chain-pdl" (chain, and the prefix kernel launched programmatically
    # too, behind whatever ran before: sm_90 split prefill kernels wait for
    # it in every CTA before their first access, so only their dispatch
    # overlaps its tail; what the runtime does with such bundles).
    chain = overlap in ("chain", "chain-pdl")
    pdl_merge = chain or overlap == "prefix-first-pdl"
    side = (torch.cuda.Stream(priority=-1 if overlap == "suffix-first-hi" else 0)
            if overlap and not chain else None)
    on_side = lambda on: torch.cuda.stream(side) if on else contextlib.nullcontext()
    with on_side(overlap == "suffix-main"):
        prefix_call = gc.prepare_launch(spk.fn, (cp, *spk.q_tiles_and_heads([b], cp)), spk.block,
                                        args, spk.shared, programmatic=overlap == "chain-pdl")
    # Suffix: request r = 1 row over its own pages; chunks [C r, C r + C).
    indptr, indices = [0], []
    for pages in own:
        indices += pages
        indptr.append(len(indices))
    starts, ends, req = [0] * (c * b), [0] * (c * b), [k // c for k in range(c * b)]
    for r, n in enumerate(suffix_lens):
        for t in range(sc):
            starts[c * r + cp + t] = n * t // sc
            ends[c * r + cp + t] = n * (t + 1) // sc
    order = ([c * r + cp + t for r in range(b) for t in range(sc)]
             + [k for k in range(c * b) if k % c < cp])
    suf = dict(qo=i32(list(range(b + 1)) + [b]), indptr=i32(indptr + [indptr[-1]]),
               indices=i32(indices), last=i32([PAGE] * (b + 1)),
               cindptr=i32([c * r for r in range(b + 1)] + [c * b]), creq=i32(req),
               cstart=i32(starts), cend=i32(ends), order=i32(order))
    smaps = gc.kv_maps(sk, kp, vp)
    args = []
    for t in (q, suf["qo"], kp, vp, suf["indptr"], suf["indices"], suf["last"], suf["cindptr"],
              suf["creq"], suf["cstart"], suf["cend"], suf["order"], part_o, part_lse, out, lse,
              smaps):
        args += gc.memref_args(t)
    with on_side(overlap and overlap != "suffix-main" and not chain):
        suffix_call = gc.prepare_launch(sk.fn, (b * sc, sk.hkv, 1), sk.block, args, sk.shared,
                                        programmatic=chain)
    fork, join = torch.cuda.Event(), torch.cuda.Event()
    mfn, mblock = sk.merge
    margs = []
    for t in (suf["qo"], suf["cindptr"], part_o, part_lse, out, lse):
        margs += gc.memref_args(t)
    merge_call = gc.prepare_launch(mfn, (b, hq, 1), mblock, margs, programmatic=pdl_merge)

    def call():
        if not overlap or chain:
            prefix_call()
            suffix_call()
            merge_call()
            return
        fork.record()
        side.wait_event(fork)
        if overlap == "suffix-main":
            suffix_call()
            prefix_call()  # on `side`
            join.record(side)
        else:
            prefix_first = overlap.startswith("prefix-first")
            if prefix_first:
                prefix_call()
            suffix_call()  # on `side`
            join.record(side)
            if not prefix_first:
                prefix_call()
        torch.cuda.current_stream().wait_event(join)
        merge_call()
    call.keep = (pre, suf, part_o, part_lse, out, lse, dummy_o, dummy_l, pmaps, smaps, side)
    call.prefix, call.suffix, call.merge = prefix_call, suffix_call, merge_call
    return out, lse, call


def inputs(k, b, prefix, suffix, gen):
    """A step's data for decode kernel k's shape: the K/V pools (the prefix's
    pages first, then each request's suffix pages), the queries, the shared
    page ids and each request's own; returns (kp, vp, q, shared, own,
    num_pages)."""
    prefix_pages, suffix_pages = prefix // PAGE, suffix // PAGE
    num_pages = prefix_pages + b * suffix_pages
    shape = (num_pages, PAGE, k.hkv, k.d)
    kp = torch.randn(shape, generator=gen).to("cuda", torch.bfloat16)
    vp = torch.randn(shape, generator=gen).to("cuda", torch.bfloat16)
    q = torch.randn(b, k.hq, k.d, generator=gen).to("cuda", torch.bfloat16)
    shared = list(range(prefix_pages))
    own = [list(range(prefix_pages + r * suffix_pages, prefix_pages + (r + 1) * suffix_pages))
           for r in range(b)]
    return kp, vp, q, shared, own, num_pages


def unsplit_prefix(pk, q, kp, vp, shared, chunks):
    """The unsplit prefill kernel pk over the shared pages in `chunks` equal
    pieces, each a "request" of all B query rows: gc.run_kernel's (out, lse,
    call) and the batch the launches read."""
    b, per = q.shape[0], len(shared) // chunks
    pre = batch_of(pk, q.repeat(chunks, 1, 1), kp, vp, [b] * chunks,
                   [shared[c * per:(c + 1) * per] for c in range(chunks)], [PAGE] * chunks)
    return (*gc.run_kernel(pk, pre), pre)


def case(dk, pk, b, prefix, suffix, chunks, gen, sk=None, spk=None, runtime=None,
         other_dk=(), suffix_chunks=()):
    hq, d = dk.hq, dk.d
    kp, vp, q, shared, own, num_pages = inputs(dk, b, prefix, suffix, gen)
    # Not composed: one decode over prefix + suffix per request.
    full = batch_of(dk, q, kp, vp, [1] * b, [shared + o for o in own], [PAGE] * b)
    out_full, lse_full, call_full = gc.run_kernel(dk, full)
    call_full()
    # Composed: the prefix in `chunks` pieces, each all B rows (prefill
    # kernel); the suffixes (decode kernel); the merge.
    out_pre, lse_pre, call_pre, pre = unsplit_prefix(pk, q, kp, vp, shared, chunks)
    suf = batch_of(dk, q, kp, vp, [1] * b, own, [PAGE] * b)
    out_suf, lse_suf, call_suf = gc.run_kernel(dk, suf)

    # The chunk states and the suffix state side by side, so the merge reads
    # them in place.
    o_all = torch.empty(chunks + 1, b, hq, d, device="cuda", dtype=out_pre.dtype)
    l_all = torch.empty(chunks + 1, b, hq, device="cuda", dtype=torch.float32)

    def composed():
        call_pre()
        call_suf()
        o_all[:chunks].copy_(out_pre.view(chunks, b, hq, d))
        o_all[chunks].copy_(out_suf)
        l_all[:chunks].copy_(lse_pre.view(chunks, b, hq))
        l_all[chunks].copy_(lse_suf)
        return merge(o_all, l_all)
    out_c, lse_c = composed()
    torch.cuda.synchronize()
    ref_o, ref_l = gc.reference(dk, full)
    rel = lambda x: ((x.double() - ref_o).norm() / ref_o.norm()).item()
    row = {"case": f"B{b} prefix {prefix} suffix {suffix}", "chunks": chunks,
           "composed_torch_merge_rel_err": rel(out_c), "not_composed_rel_err": rel(out_full),
           "composed_torch_merge_lse_err": (lse_c.double() - ref_l).abs().max().item()}
    row["not_composed_ms"] = gc.time_ms(call_full, reps=20)
    row["ok"] = row["composed_torch_merge_rel_err"] <= 1e-2

    def measured(key, out_x, lse_x, call_x):
        """A path's output (after call_x ran) against the float64
        reference, then its time; whether it passed (a failure marks the
        row not ok)."""
        torch.cuda.synchronize()
        row[f"{key}_rel_err"] = rel(out_x)
        row[f"{key}_lse_err"] = (lse_x.double() - ref_l).abs().max().item()
        row[f"{key}_nan"] = bool(torch.isnan(out_x).any() or torch.isnan(lse_x).any())
        row[f"{key}_ms"] = gc.time_ms(call_x, reps=20)
        ok = (row[f"{key}_rel_err"] <= 1e-2 and row[f"{key}_lse_err"] <= 1e-2
              and not row[f"{key}_nan"])
        row["ok"] = row["ok"] and ok
        return ok

    # The uncomposed step with other decode kernels (other warps per CTA):
    # the ratio is taken to the fastest.
    row["not_composed_default_ms"] = row["not_composed_ms"]
    for label, k in other_dk:
        full_k = batch_of(k, q, kp, vp, [1] * b, [shared + o for o in own], [PAGE] * b)
        o_k, l_k, call_k = gc.run_kernel(k, full_k)  # launches read full_k's buffers
        call_k()
        if measured(f"not_composed_{label}", o_k, l_k, call_k):
            row["not_composed_ms"] = min(row["not_composed_ms"], row[f"not_composed_{label}_ms"])
    row["composed_torch_merge_ms"] = gc.time_ms(composed, reps=20)
    row["prefix_part_ms"] = gc.time_ms(call_pre, reps=20)
    row["composed_ms"] = row["composed_torch_merge_ms"]
    if sk is not None and spk is not None:
        def composed_path(key, overlap):
            """cascade() with `overlap`, measured(); a passing path may set
            composed_ms."""
            out_x, lse_x, call_x = cascade(sk, spk, q, kp, vp, shared, own, chunks, prefix,
                                           [suffix] * b, overlap=overlap)
            call_x()
            if measured(key, out_x, lse_x, call_x):
                row["composed_ms"] = min(row["composed_ms"], row[f"{key}_ms"])
            return call_x

        # FlashIR kernels only (split prefill + split decode + merge kernel).
        call_k = composed_path("composed_kernels", False)
        # Each kernel alone (back to back launches of it only).
        row["composed_kernels_prefix_ms"] = gc.time_ms(call_k.prefix, reps=20)
        row["composed_kernels_suffix_ms"] = gc.time_ms(call_k.suffix, reps=20)
        row["composed_kernels_merge_ms"] = gc.time_ms(call_k.merge, reps=20)
        # The same with the suffix kernel on a second stream (how much of the
        # suffix hides under the prefix kernel), and the three kernels
        # chained on one stream (programmatic launches: what the runtime
        # runs with sm_90 bundles).
        composed_path("composed_overlap", "suffix-first")
        composed_path("composed_chain", "chain")
        composed_path("composed_chain_pdl", "chain-pdl")
        # Each suffix in S chunks: the suffix kernel alone, then the chain.
        for sc in suffix_chunks:
            out_s, lse_s, call_s = cascade(sk, spk, q, kp, vp, shared, own, chunks, prefix,
                                           [suffix] * b, overlap="chain-pdl", suffix_chunks=sc)
            call_s()
            key = f"composed_chain_pdl_s{sc}"
            if measured(key, out_s, lse_s, call_s):
                row["composed_ms"] = min(row["composed_ms"], row[f"{key}_ms"])
            row[f"composed_kernels_suffix_s{sc}_ms"] = gc.time_ms(call_s.suffix, reps=20)
            row[f"composed_kernels_merge_s{sc}_ms"] = gc.time_ms(call_s.merge, reps=20)
        # Other prefix chunk counts (fewer CTAs than slots leave SMs to the
        # suffix kernel from the start; more make a second wave).
        # The launch orders (`overlap`) at the default chunk count.
        if b >= 64:
            variants = [(cn, "suffix-first") for cn in (8, 15, 18, 32) if cn != chunks]
            variants += [(chunks, "prefix-first"), (chunks, "suffix-main")]
            for cn, mode in variants:
                o_n, l_n, call_n = cascade(sk, spk, q, kp, vp, shared, own, cn, prefix,
                                           [suffix] * b, overlap=mode)
                call_n()
                torch.cuda.synchronize()
                err = max(rel(o_n), (l_n.double() - ref_l).abs().max().item())
                key = f"composed_overlap_c{cn}" + ("" if mode == "suffix-first" else f"_{mode}")
                row[f"{key}_ms"] = gc.time_ms(call_n, reps=20) if err <= 1e-2 else None
    for label, wrapper in (runtime or {}).items():
        try:
            # The same composition through the runtime (CascadeDecodeRunner via
            # the Python package; its own prefix chunk count).
            prefix_ids = torch.tensor(shared, dtype=torch.int32)
            s_indptr = torch.tensor([len(own[0]) * r for r in range(b + 1)], dtype=torch.int32)
            s_indices = torch.tensor([p for o in own for p in o], dtype=torch.int32)
            s_last = torch.full((b,), PAGE, dtype=torch.int32)
            wrapper.plan(prefix_ids, prefix, s_indptr, s_indices, s_last, num_pages)
            pid, sid = prefix_ids.cuda(), s_indices.cuda()
            fn = lambda: wrapper.run(q, (kp, vp), pid, sid)
            out_r, lse_r = fn()
            torch.cuda.synchronize()
            row[f"{label}_prefix_chunks"] = wrapper.prefix_chunks
            row[f"{label}_planned_prefix_chunks"] = wrapper.planned_prefix_chunks
            row[f"{label}_planned_suffix_chunks"] = wrapper.planned_suffix_chunks
            row[f"{label}_rel_err"] = rel(out_r)
            row[f"{label}_lse_err"] = (lse_r.double() - ref_l).abs().max().item()
            row[f"{label}_nan"] = bool(torch.isnan(out_r).any() or torch.isnan(lse_r).any())
            row[f"{label}_ms"] = gc.time_ms(fn, reps=20)
            row[f"{label}_kernel_us"] = gc.kernel_times(fn)
            # The same step captured once into a CUDA graph (capacity grids;
            # the second stream joins the capture through its events) and
            # replayed.
            graph = torch.cuda.CUDAGraph()
            gfn = lambda: wrapper.run(q, (kp, vp), pid, sid, capacity_grids=True)
            gfn()
            torch.cuda.synchronize()
            with torch.cuda.graph(graph):
                out_g, lse_g = gfn()
            graph.replay()
            torch.cuda.synchronize()
            row[f"{label}_graph_rel_err"] = rel(out_g)
            row[f"{label}_graph_ms"] = gc.time_ms(graph.replay, reps=20)
            ok = (row[f"{label}_rel_err"] <= 1e-2 and row[f"{label}_lse_err"] <= 1e-2
                  and not row[f"{label}_nan"] and row[f"{label}_graph_rel_err"] <= 1e-2)
            row["ok"] = row["ok"] and ok
            if ok:
                row["composed_ms"] = min(row["composed_ms"], row[f"{label}_ms"],
                                         row[f"{label}_graph_ms"])
        except Exception as e:  # recorded; the other paths' numbers stand
            row[f"{label}_error"] = f"{type(e).__name__}: {e}"[:300]
            row["ok"] = False
    row["speedup"] = row["not_composed_ms"] / row["composed_ms"]
    # What a runtime would run: composition where it is faster (the prefix
    # is read once instead of B times, against two more launches + a merge).
    row["policy"] = "composed" if row["composed_ms"] < row["not_composed_ms"] else "not composed"
    row["policy_ms"] = min(row["composed_ms"], row["not_composed_ms"])
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decode-bundle", required=True)
    ap.add_argument("--prefill-bundle", required=True)
    ap.add_argument("--split-bundle", default=None,
                    help="split-KV decode bundle of the suffix (default: DECODE_BUNDLE-split-w1 "
                         "where it exists, else DECODE_BUNDLE-split)")
    ap.add_argument("--plain-bundles", nargs="*", default=None,
                    help="other decode bundles for the uncomposed step (default: "
                         "DECODE_BUNDLE-w2 where it exists)")
    ap.add_argument("--prefill-split-bundle", default=None,
                    help="split-KV prefill bundle (default: PREFILL_BUNDLE-split)")
    ap.add_argument("--prefix-chunks", type=int, default=16,
                    help="B64's prefix chunks in the kernels' paths (16: 256 CTAs of the "
                         "mma.sync kernel, one wave at two per SM; 8 suits the wgmma "
                         "kernel's one CTA per SM)")
    ap.add_argument("--suffix-chunks", type=int, nargs="*", default=[],
                    help="also the chained kernels with each suffix in S chunks, for each S")
    ap.add_argument("--runtime-split-bundles", nargs="*", default=[],
                    help="more split-KV decode bundles of the suffix, each through the "
                         "runtime only (rows runtime_<name>_*)")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    dk = load(args.decode_bundle, "plain_h32_p16")
    split = args.split_bundle or args.decode_bundle + "-split-w1"
    if not args.split_bundle and not os.path.exists(os.path.join(split, "manifest.json")):
        split = args.decode_bundle + "-split"
    plain = args.plain_bundles
    if plain is None:
        plain = [p for p in (args.decode_bundle + "-w2",)
                 if os.path.exists(os.path.join(p, "manifest.json"))]
    other_dk = [(os.path.basename(p.rstrip("/")), load(p, "plain_h32_p16")) for p in plain]
    prefill_split = args.prefill_split_bundle or args.prefill_bundle + "-split"
    sk = spk = None
    runtime = {}
    if all(os.path.exists(os.path.join(p, "manifest.json")) for p in (split, prefill_split)):
        sk = load(split, "plain_h32_p16")
        spk = load(prefill_split, "plain_d128_g4_p16_bf16_fused")
        try:  # the runtime's cascade (needs libflashir_c.so)
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "..", "python"))
            import flashir
            suffixes = [("runtime", split)] + [
                ("runtime_" + os.path.basename(p.rstrip("/")), p)
                for p in args.runtime_split_bundles]
            for b in (64, 16):
                runtime[b] = {label: flashir.SharedPrefixRunner(
                    prefill_split, "plain_d128_g4_p16_bf16_fused", path, "plain_h32_p16",
                    max_requests=b) for label, path in suffixes}
        except Exception as e:  # reported, not fatal: the kernels' path still runs
            print(f"runtime cascade unavailable: {e}")
    # The prefix part: fused head groups (a CTA's 128 rows are 32 queries x
    # the 4 query heads of one KV head), so each KV head's keys are read by
    # B / 32 CTAs instead of B / 128 x 4.
    pk = load(args.prefill_bundle, "plain_d128_g4_p16_bf16_fused")
    gen = torch.Generator().manual_seed(5)
    rows = []
    # Chunks: B64 -> 16 chunks x 2 q tiles x 8 KV heads = 256 CTAs, one wave
    # of the H200's 132 SMs x 2.
    for b, prefix, suffix, chunks in ((64, 32768, 128, args.prefix_chunks),
                                      (16, 1024, 128, 4)):
        row = case(dk, pk, b, prefix, suffix, chunks, gen, sk, spk, runtime.get(b), other_dk,
                   args.suffix_chunks)
        row["suffix_bundle"] = os.path.basename(split.rstrip("/"))
        rows.append(row)
        print(json.dumps(row))
    gc.write_rows(args.out, "shared_prefix.json", rows)
    sys.exit(0 if all(r["ok"] for r in rows) else 1)


if __name__ == "__main__":
    main()

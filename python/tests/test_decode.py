"""Tests of python/flashir on a GPU (pytest, or `python3 test_decode.py`).

Needs PyTorch with CUDA, the runtime's libflashir_c.so and a split-KV bundle
(scripts/gpu-bundle.sh writes build-gpu/bundle-split; FLASHIR_BUNDLE_SPLIT
overrides). Skipped where any of these is missing."""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    torch, HAVE_GPU = None, False

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUNDLE = os.environ.get("FLASHIR_BUNDLE_SPLIT", os.path.join(ROOT, "build-gpu", "bundle-split"))
KERNEL = "plain_h32_p16"  # bf16, Hq 32, Hkv 8, d 128, page 16
# Split-KV prefill kernels (flashir-bundle --split-prefill).
PREFILL_BUNDLE = os.environ.get("FLASHIR_BUNDLE_PREFILL_SPLIT",
                                os.path.join(ROOT, "build-gpu", "bundle-prefill-split"))

from gpu_test_support import raises, run_as_script, skip_unless  # noqa: E402

HAVE_BUNDLE = HAVE_GPU and os.path.exists(os.path.join(BUNDLE, "manifest.json"))
requires_gpu = skip_unless(HAVE_BUNDLE, "needs a CUDA GPU and a split-KV bundle")
requires_prefill_bundle = skip_unless(
    HAVE_GPU and os.path.exists(os.path.join(PREFILL_BUNDLE, "manifest.json")),
    "needs a CUDA GPU and a split-KV prefill bundle")

import flashir  # noqa: E402


def make_batch(lens, pool_pages=600, seed=0):
    gen = torch.Generator().manual_seed(seed)
    page, hkv, d, hq = 16, 8, 128, 32
    perm = torch.randperm(pool_pages, generator=gen).tolist()
    indptr, indices, last = [0], [], []
    for n in lens:
        p = (n + page - 1) // page
        indices += [perm[(len(indices) + i) % pool_pages] for i in range(p)]
        indptr.append(len(indices))
        last.append(n - (p - 1) * page if p else 0)
    i32 = lambda x: torch.tensor(x, dtype=torch.int32)
    k = torch.randn(pool_pages, page, hkv, d, generator=gen).to("cuda", torch.bfloat16)
    v = torch.randn(pool_pages, page, hkv, d, generator=gen).to("cuda", torch.bfloat16)
    q = torch.randn(len(lens), hq, d, generator=gen).to("cuda", torch.bfloat16)
    return dict(qo=i32(list(range(len(lens) + 1))), indptr=i32(indptr),
                indices=i32(indices if indices else [0]), last=i32(last), k=k, v=v, q=q,
                lens=lens, pool_pages=pool_pages)


def reference(b):
    """float64: each request's keys gathered through its pages."""
    hq, hkv, d = 32, 8, 128
    outs, lses = [], []
    for r, n in enumerate(b["lens"]):
        if n == 0:
            outs.append(torch.zeros(hq, d, dtype=torch.float64, device="cuda"))
            lses.append(torch.full((hq,), -math.inf, dtype=torch.float64, device="cuda"))
            continue
        pages = b["indices"][b["indptr"][r]:b["indptr"][r + 1]].long().cuda()
        kk = b["k"][pages].reshape(-1, hkv, d)[:n].double().repeat_interleave(hq // hkv, 1)
        vv = b["v"][pages].reshape(-1, hkv, d)[:n].double().repeat_interleave(hq // hkv, 1)
        s = torch.einsum("hd,lhd->hl", b["q"][r].double(), kk) / math.sqrt(d)
        lse = torch.logsumexp(s, dim=1)
        outs.append(torch.einsum("hl,lhd->hd", torch.exp(s - lse[:, None]), vv))
        lses.append(lse)
    return torch.stack(outs), torch.stack(lses)


def run(wrapper, b, capacity_grids=False):
    wrapper.plan(b["qo"], b["indptr"], b["indices"], b["last"], b["pool_pages"])
    return wrapper.run(b["q"], (b["k"], b["v"]), b["indices"].cuda(),
                       capacity_grids=capacity_grids)


def check_close(out, lse, ref_o, ref_l):
    rel = ((out.double() - ref_o).norm() / ref_o.norm().clamp_min(1e-30)).item()
    assert rel <= 1e-2, rel
    finite = torch.isfinite(ref_l)
    assert bool((lse[~finite] == -math.inf).all())
    if finite.any():
        assert (lse.double()[finite] - ref_l[finite]).abs().max().item() <= 1e-2
    assert not torch.isnan(out).any()


@requires_gpu
def test_plan_run_matches_float64():
    wrapper = flashir.SplitKVRunner(BUNDLE, KERNEL, max_requests=64)
    b = make_batch([700, 0, 16, 1, 3000, 77, 128, 5000, 33, 2], seed=1)
    out, lse = run(wrapper, b)
    torch.cuda.synchronize()
    check_close(out, lse, *reference(b))


@requires_gpu
def test_one_wrapper_many_steps():
    wrapper = flashir.SplitKVRunner(BUNDLE, KERNEL, max_requests=64)
    gen = torch.Generator().manual_seed(3)
    for step in range(4):
        lens = torch.randint(0, 2500, (int(torch.randint(1, 64, (1,), generator=gen)),),
                             generator=gen).tolist()
        b = make_batch(lens, seed=10 + step)
        # Odd steps with grids for the capacity (64 requests).
        out, lse = run(wrapper, b, capacity_grids=step % 2 == 1)
        torch.cuda.synchronize()
        check_close(out, lse, *reference(b))


@requires_gpu
def test_errors_raise_with_clear_messages():
    wrapper = flashir.SplitKVRunner(BUNDLE, KERNEL, max_requests=8)
    b = make_batch([40, 17], seed=2)
    with raises(ValueError, match="outside the page pool"):
        wrapper.plan(b["qo"], b["indptr"], torch.tensor([600, 1, 2, 3, 4], dtype=torch.int32),
                     b["last"], b["pool_pages"])
    with raises(ValueError, match=r"last_page_len\[1\] = 0 is outside 1\.\.16"):
        wrapper.plan(b["qo"], b["indptr"], b["indices"],
                     torch.tensor([8, 0], dtype=torch.int32), b["pool_pages"])
    with raises(ValueError, match="indptr decreases"):
        wrapper.plan(b["qo"], torch.tensor([0, 3, 2], dtype=torch.int32), b["indices"],
                     b["last"], b["pool_pages"])
    with raises(TypeError, match="int32"):
        wrapper.plan(b["qo"].long(), b["indptr"], b["indices"], b["last"], b["pool_pages"])
    with raises(ValueError, match="entries"):
        wrapper.plan(b["qo"][:2], b["indptr"], b["indices"], b["last"], b["pool_pages"])
    with raises(ValueError, match="kv_indices has 4 entries"):
        wrapper.plan(b["qo"], b["indptr"], b["indices"][:4], b["last"], b["pool_pages"])
    big = make_batch([5] * 9, seed=4)
    with raises(flashir.FlashIRError, match="PlanCapacity::maxRequests"):
        wrapper.plan(big["qo"], big["indptr"], big["indices"], big["last"], big["pool_pages"])
    wrapper.plan(b["qo"], b["indptr"], b["indices"], b["last"], b["pool_pages"])
    idx = b["indices"].cuda()
    with raises(TypeError, match="bfloat16"):
        wrapper.run(b["q"].half(), (b["k"], b["v"]), idx)
    with raises(ValueError, match="CUDA tensor"):
        wrapper.run(b["q"].cpu(), (b["k"], b["v"]), idx)
    with raises(ValueError, match="q must be"):
        wrapper.run(b["q"][:1], (b["k"], b["v"]), idx)
    with raises(ValueError, match="k_pool must be"):
        wrapper.run(b["q"], (b["k"][:, :8].contiguous(), b["v"]), idx)
    with raises(ValueError, match="no split-KV kernels"):
        flashir.SplitKVRunner(BUNDLE, "no_such_kernel")


@requires_gpu
def test_prefill_wrapper_takes_several_rows_per_request():
    # Ragged queries (0..5 rows) over the paged cache, the plain kernel: every
    # row attends to all of its request's keys.
    qo_lens, kv_lens = [3, 1, 5, 0, 2, 4], [700, 16, 3000, 40, 1, 0]
    b = make_batch(kv_lens, seed=5)
    gen = torch.Generator().manual_seed(6)
    rows = sum(qo_lens)
    q = torch.randn(rows, 32, 128, generator=gen).to("cuda", torch.bfloat16)
    qo = torch.tensor([sum(qo_lens[:i]) for i in range(len(qo_lens) + 1)],
                      dtype=torch.int32)
    wrapper = flashir.SplitKVRunner(BUNDLE, KERNEL, max_requests=8,
                                                          max_qo_len=5)
    wrapper.plan(qo, b["indptr"], b["indices"], b["last"], b["pool_pages"])
    out, lse = wrapper.run(q, (b["k"], b["v"]), b["indices"].cuda())
    torch.cuda.synchronize()
    assert tuple(out.shape) == (rows, 32, 128) and tuple(lse.shape) == (rows, 32)
    # Reference: each row as a one-row request over its request's keys.
    req = [r for r, m in enumerate(qo_lens) for _ in range(m)]
    ref_o, ref_l = [], []
    for i, r in enumerate(req):
        one = dict(b)
        one["lens"] = [kv_lens[r]]
        one["q"] = q[i:i + 1]
        one["indptr"] = b["indptr"][r:r + 2] - b["indptr"][r]
        one["indices"] = b["indices"][int(b["indptr"][r]):int(b["indptr"][r + 1])]
        o, lo = reference(one)
        ref_o.append(o[0])
        ref_l.append(lo[0])
    check_close(out, lse, torch.stack(ref_o), torch.stack(ref_l))
    too_long = torch.tensor([0, 6], dtype=torch.int32)
    with raises(flashir.FlashIRError, match="maxQueryRowsPerRequest"):
        wrapper.plan(too_long, b["indptr"][:2], b["indices"], b["last"][:1], b["pool_pages"])
    with raises(ValueError, match="max_qo_len"):
        flashir.SplitKVRunner(BUNDLE, KERNEL, max_qo_len=0)


def ragged_reference(b, q, qo_lens, kv_lens, causal):
    """float64 per request: rows [m, Hq, D] over the request's n keys; causal
    aligns the last row with the last key (row i sees keys <= n - m + i)."""
    hq, hkv, d = 32, 8, 128
    outs, lses, row = [], [], 0
    for r, (m, n) in enumerate(zip(qo_lens, kv_lens)):
        if m == 0:
            continue
        qq = q[row:row + m].double()
        row += m
        pages = b["indices"][int(b["indptr"][r]):int(b["indptr"][r + 1])].long().cuda()
        kk = b["k"][pages].reshape(-1, hkv, d)[:n].double().repeat_interleave(hq // hkv, 1)
        vv = b["v"][pages].reshape(-1, hkv, d)[:n].double().repeat_interleave(hq // hkv, 1)
        s = torch.einsum("mhd,lhd->mhl", qq, kk) / math.sqrt(d)
        if causal:
            keep = (torch.arange(n, device="cuda")[None, :]
                    <= (n - m + torch.arange(m, device="cuda"))[:, None])
            s = s.masked_fill(~keep[:, None, :], -math.inf)
        lse = torch.logsumexp(s, dim=2)
        p = torch.where(torch.isinf(lse)[..., None], torch.zeros_like(s),
                        torch.exp(s - lse[..., None]))
        outs.append(torch.einsum("mhl,lhd->mhd", p, vv))
        lses.append(lse)
    return torch.cat(outs), torch.cat(lses)


@requires_prefill_bundle
def test_prefill_wrapper_runs_split_kv_tensor_core_kernels():
    # The tensor-core split-KV prefill kernels (per query head, and fused
    # head groups per KV head) through plan/run: ragged prompts split into
    # chunks by the planner, merged by the merge kernel; several steps on one
    # wrapper; causal rows with no visible key.
    for kernel, causal in (("causal_d128_g4_p16_bf16", True),
                           ("plain_d128_g4_p16_bf16_fused", False)):
        wrapper = flashir.SplitKVRunner(
            PREFILL_BUNDLE, kernel, max_requests=8, max_qo_len=512)
        for step, (qo_lens, kv_lens) in enumerate((
                ([300, 1, 130, 17, 0], [1000, 40, 300, 17, 5]),
                ([512, 64], [2048, 20]),          # fewer keys than rows (causal)
                ([7] * 8, [1, 16, 17, 100, 333, 700, 1500, 4000]))):
            b = make_batch(kv_lens, pool_pages=800, seed=20 + step)
            gen = torch.Generator().manual_seed(30 + step)
            rows = sum(qo_lens)
            q = torch.randn(rows, 32, 128, generator=gen).to("cuda", torch.bfloat16)
            qo = torch.tensor([sum(qo_lens[:i]) for i in range(len(qo_lens) + 1)],
                              dtype=torch.int32)
            info = wrapper.plan(qo, b["indptr"], b["indices"], b["last"], b["pool_pages"])
            out, lse = wrapper.run(q, (b["k"], b["v"]), b["indices"].cuda())
            torch.cuda.synchronize()
            # The longest request splits (the planner's C, over q tiles,
            # leaves room for it in every step here).
            assert info["chunks"] > sum(1 for m in qo_lens if m), info
            check_close(out[:rows], lse[:rows], *ragged_reference(b, q, qo_lens, kv_lens, causal))


@requires_gpu
@requires_prefill_bundle
def test_shared_prefix_wrapper_matches_float64():
    # One prefix read once for all rows (split-KV prefill kernel, fused head
    # groups) + each request's suffix (split-KV decode kernel), merged by the
    # merge kernel; partial prefix pages, an empty suffix, several steps.
    w = flashir.SharedPrefixRunner(PREFILL_BUNDLE, "plain_d128_g4_p16_bf16_fused",
                                               BUNDLE, KERNEL, max_requests=16)
    # The same steps chunked otherwise: >= 512 prefix keys and >= 32 suffix
    # keys a chunk, at most 2 suffix chunks.
    w2 = flashir.SharedPrefixRunner(PREFILL_BUNDLE, "plain_d128_g4_p16_bf16_fused",
                                    BUNDLE, KERNEL, max_requests=16, min_chunk_keys=512,
                                    suffix_chunks=2, min_suffix_chunk_keys=32)
    assert w.prefix_chunks >= 2
    hq, hkv, d = 32, 8, 128
    # Suffix chunks (one per 64 keys, up to 4): 4 in step 0 (with empty
    # ones), 3 in step 1 (exact grids), 1 in step 2.
    for step, (prefix_len, suffix_lens) in enumerate(((1000, [128, 0, 17, 1, 300]),
                                                       (4096, [5] * 15 + [130]),
                                                       (33, [64, 2]))):
        b = make_batch([prefix_len] + suffix_lens, pool_pages=800, seed=40 + step)
        ip = b["indptr"]
        prefix_pages = b["indices"][:int(ip[1])]
        s_indptr = ip[1:] - ip[1]
        s_indices = b["indices"][int(ip[1]):]
        q = b["q"][1:].contiguous()
        w.plan(prefix_pages, prefix_len, s_indptr, s_indices, b["last"][1:], b["pool_pages"])
        # Short prefixes take fewer chunks (>= 256 keys each, at least 2).
        assert w.planned_prefix_chunks == min(max(2, -(-prefix_len // 256)), w.prefix_chunks)
        assert w.planned_suffix_chunks == (4, 3, 1)[step]
        # Steps 0 and 2 with grids for the capacity (16 requests, 5 and 2
        # planned; prefix chunks past the planned run the padding chunk).
        out, lse = w.run(q, (b["k"], b["v"]), prefix_pages.cuda(), s_indices.cuda(),
                         capacity_grids=step != 1)
        torch.cuda.synchronize()
        tokens = lambda pool, pages, n: pool[pages.long().cuda()].reshape(-1, hkv, d)[:n]
        ref_o, ref_l = [], []
        for r, n in enumerate(suffix_lens):
            pages = s_indices[int(s_indptr[r]):int(s_indptr[r + 1])]
            kk = torch.cat([tokens(b["k"], prefix_pages, prefix_len), tokens(b["k"], pages, n)])
            vv = torch.cat([tokens(b["v"], prefix_pages, prefix_len), tokens(b["v"], pages, n)])
            kk = kk.double().repeat_interleave(hq // hkv, 1)
            vv = vv.double().repeat_interleave(hq // hkv, 1)
            sc = torch.einsum("hd,lhd->hl", q[r].double(), kk) / math.sqrt(d)
            l = torch.logsumexp(sc, dim=1)
            ref_o.append(torch.einsum("hl,lhd->hd", torch.exp(sc - l[:, None]), vv))
            ref_l.append(l)
        check_close(out, lse, torch.stack(ref_o), torch.stack(ref_l))
        w2.plan(prefix_pages, prefix_len, s_indptr, s_indices, b["last"][1:], b["pool_pages"])
        assert w2.planned_prefix_chunks == min(max(2, -(-prefix_len // 512)), w2.prefix_chunks)
        assert w2.planned_suffix_chunks == min(2, max(1, -(-max(suffix_lens) // 32)))
        out2, lse2 = w2.run(q, (b["k"], b["v"]), prefix_pages.cuda(), s_indices.cuda())
        torch.cuda.synchronize()
        check_close(out2, lse2, torch.stack(ref_o), torch.stack(ref_l))
    with raises(ValueError, match="suffix_chunks must be a positive int"):
        flashir.SharedPrefixRunner(PREFILL_BUNDLE, "plain_d128_g4_p16_bf16_fused", BUNDLE,
                                   KERNEL, suffix_chunks=0)
    with raises(ValueError, match="prefix page id"):
        w.plan(torch.tensor([800], dtype=torch.int32), 16, s_indptr, s_indices,
               b["last"][1:], b["pool_pages"])
    with raises(ValueError, match="takes 2 pages of 16"):
        w.plan(prefix_pages[:1], 17, s_indptr, s_indices, b["last"][1:], b["pool_pages"])
    with raises(ValueError, match="no split-KV prefill kernel"):
        flashir.SharedPrefixRunner(PREFILL_BUNDLE, "no_such", BUNDLE, KERNEL)


@requires_gpu
def test_merge_state_matches_attention_over_all_keys():
    gen = torch.Generator().manual_seed(7)
    q = torch.randn(4, 8, 64, generator=gen, dtype=torch.float64)
    k = torch.randn(300, 8, 64, generator=gen, dtype=torch.float64)
    v = torch.randn(300, 8, 64, generator=gen, dtype=torch.float64)

    def attend(kk, vv):
        s = torch.einsum("qhd,lhd->qhl", q, kk)
        lse = torch.logsumexp(s, dim=-1)
        return torch.einsum("qhl,lhd->qhd", torch.exp(s - lse[..., None]), vv), lse

    full_v, full_s = attend(k, v)
    parts = [attend(k[a:b], v[a:b]) for a, b in ((0, 100), (100, 250), (250, 300))]
    # The PyTorch path (float32 on the host); tests/test_api.py checks the kernel's.
    mv, ms = flashir.merge_states(torch.stack([p[0] for p in parts], 1).float(),
                                  torch.stack([p[1] for p in parts], 1).float())
    assert (mv.double() - full_v).abs().max().item() < 1e-5
    assert (ms.double() - full_s).abs().max().item() < 1e-5
    empty_v, empty_s = torch.zeros_like(full_v), torch.full_like(full_s, -math.inf)
    ev, es = flashir.merge_state(full_v.float(), full_s.float(), empty_v.float(), empty_s.float())
    assert torch.equal(ev, full_v.float()) and torch.equal(es, full_s.float())
    zv, zs = flashir.merge_state(empty_v, empty_s, empty_v, empty_s)
    assert bool((zs == -math.inf).all()) and not torch.isnan(zv).any()
    with raises(ValueError, match="v_a and v_b"):
        flashir.merge_state(full_v, full_s, full_v[:1], full_s[:1])


if __name__ == "__main__":
    run_as_script(globals(), HAVE_BUNDLE, f"needs a CUDA GPU and {BUNDLE}")

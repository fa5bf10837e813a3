"""The public Python API on a GPU (pytest, or `python3 test_api.py`): the
FlashInfer-named wrappers from an empty JIT cache, every standard variant
with its parameters, NHD and HND, head dims and groups, merges, CUDA-graph
replay over changing batches, and a bad-input matrix -- each against a
float64 PyTorch reference on fresh random data.

Needs PyTorch with CUDA, libflashir_c.so and a flashir-bundle (see
flashir.jit.find_compiler); skipped where any is missing."""

import math
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    torch, HAVE_GPU = None, False

import flashir  # noqa: E402
from flashir import jit, options  # noqa: E402
from gpu_test_support import raises, run_as_script, skip_unless  # noqa: E402

try:
    jit.find_compiler()
    HAVE_COMPILER = True
except jit.JitError:
    HAVE_COMPILER = False

if HAVE_GPU and HAVE_COMPILER and "FLASHIR_CACHE_DIR" not in os.environ:
    # An empty cache: every configuration below compiles on first use.
    os.environ["FLASHIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="flashir-cache-")

requires_gpu = skip_unless(HAVE_GPU and HAVE_COMPILER, "needs a CUDA GPU and flashir-bundle")


# -- data and the float64 reference --------------------------------------------

def paged_batch(qo_lens, kv_lens, hq=32, hkv=8, d=128, page=16, layout="NHD",
                dtype=None, seed=0, extra_pages=7):
    """Random q and a paged cache whose pages are shuffled across the pool."""
    dtype = dtype or torch.bfloat16
    gen = torch.Generator().manual_seed(seed)
    counts = [(n + page - 1) // page for n in kv_lens]
    pool = sum(counts) + extra_pages
    perm = torch.randperm(pool, generator=gen)
    indptr = [0]
    for c in counts:
        indptr.append(indptr[-1] + c)
    indices = perm[:indptr[-1]].to(torch.int32)
    last = [n - (c - 1) * page if c else 0 for n, c in zip(kv_lens, counts)]
    shape = (pool, page, hkv, d) if layout == "NHD" else (pool, hkv, page, d)
    k = torch.randn(*shape, generator=gen).to("cuda", dtype)
    v = torch.randn(*shape, generator=gen).to("cuda", dtype)
    q = torch.randn(sum(qo_lens), hq, d, generator=gen).to("cuda", dtype)
    qo = [0]
    for n in qo_lens:
        qo.append(qo[-1] + n)
    i32 = lambda x: torch.tensor(x, dtype=torch.int32)  # noqa: E731
    return dict(q=q, k=k, v=v, qo_indptr=i32(qo), kv_indptr=i32(indptr), kv_indices=indices,
                last=i32(last), qo_lens=list(qo_lens), kv_lens=list(kv_lens), hq=hq, hkv=hkv,
                d=d, page=page, layout=layout)


def request_kv(b, r, which):
    pages = b["kv_indices"][b["kv_indptr"][r]:b["kv_indptr"][r + 1]].long().cuda()
    t = b[which][pages]
    if b["layout"] == "HND":
        t = t.permute(0, 2, 1, 3)
    return t.reshape(-1, b["hkv"], b["d"])[:b["kv_lens"][r]].double()


def rope(x, pos, theta, scale):
    """LLaMA RoPE (rotate-half) of x [n, H, D] at positions pos [n]."""
    d = x.shape[-1]
    half = d // 2
    freq = theta ** (-torch.arange(half, dtype=torch.float64, device=x.device) / half)
    angle = (pos.double()[:, None] / scale) * freq[None, :]
    cos, sin = torch.cos(angle)[:, None, :], torch.sin(angle)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def reference(b, causal=False, window_left=-1, soft_cap=None, alibi=False, rope_args=None,
              masks=None, sm_scale=None, rope_offsets=None, sigmoid_bias=None):
    """float64 attention of each request: (out [rows, Hq, D], lse [rows, Hq]);
    `rope_offsets`: per-request position offsets of RoPE; `sigmoid_bias`:
    sigmoid attention (sum of sigmoid(s + bias) v, unnormalised; lse is
    then meaningless)."""
    hq, hkv, d = b["hq"], b["hkv"], b["d"]
    scale = sm_scale if sm_scale is not None else d ** -0.5
    slopes = torch.tensor(options.alibi_slopes(hq), dtype=torch.float64, device="cuda")
    outs, lses = [], []
    for r, (nq, nk) in enumerate(zip(b["qo_lens"], b["kv_lens"])):
        q = b["q"][b["qo_indptr"][r]:b["qo_indptr"][r + 1]].double()
        k, v = request_kv(b, r, "k"), request_kv(b, r, "v")
        qpos = torch.arange(nq, device="cuda") + nk - nq
        kpos = torch.arange(nk, device="cuda")
        if rope_args:
            off = rope_offsets[r] if rope_offsets is not None else 0
            q, k = rope(q, qpos + off, *rope_args), rope(k, kpos + off, *rope_args)
        k = k.repeat_interleave(hq // hkv, 1)
        v = v.repeat_interleave(hq // hkv, 1)
        s = torch.einsum("qhd,khd->hqk", q, k) * scale
        rel = (kpos[None, :] - qpos[:, None]).double()
        if alibi:
            s = s + slopes[:, None, None] * rel[None]
        if soft_cap:
            s = soft_cap * torch.tanh(s / soft_cap)
        keep = torch.ones(nq, nk, dtype=torch.bool, device="cuda")
        if causal:
            keep &= rel <= 0
        if window_left >= 0:
            keep &= rel >= -window_left
        if masks is not None:
            keep &= masks[r].cuda()
        if sigmoid_bias is not None:
            p = torch.sigmoid(s + sigmoid_bias) * keep[None]
            outs.append(torch.einsum("hqk,khd->qhd", p, v))
            lses.append(torch.zeros(nq, hq, dtype=torch.float64, device="cuda"))
            continue
        s = s.masked_fill(~keep[None], -math.inf)
        lse = torch.logsumexp(s, dim=-1)  # [h, q]
        p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
        outs.append(torch.einsum("hqk,khd->qhd", p, v))
        lses.append(lse.transpose(0, 1))
    return torch.cat(outs), torch.cat(lses)


def check(out, lse, ref_o, ref_l, tol=1e-2):
    assert not torch.isnan(out).any()
    rel = ((out.double() - ref_o).norm() / ref_o.norm().clamp_min(1e-30)).item()
    assert rel <= tol, rel
    finite = torch.isfinite(ref_l)
    assert bool((lse[~finite] == -math.inf).all())
    if finite.any():
        assert (lse.double()[finite] - ref_l[finite]).abs().max().item() <= 2e-2
    return rel


def workspace():
    return torch.empty(16 << 20, dtype=torch.uint8, device="cuda")


def decode_plan(w, b, **kw):
    w.plan(b["kv_indptr"], b["kv_indices"], b["last"], b["hq"], b["hkv"], b["d"], b["page"],
           q_data_type=b["q"].dtype, **kw)


def prefill_plan(w, b, **kw):
    w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["last"], b["hq"], b["hkv"],
           b["d"], b["page"], q_data_type=b["q"].dtype, **kw)


# The standard variants as FlashInfer options: (plan kwargs, reference kwargs).
VARIANTS = {
    "plain": ({}, {}),
    "soft_cap": (dict(logits_soft_cap=30.0), dict(soft_cap=30.0)),
    "window": (dict(window_left=40), dict(window_left=40)),
    "alibi": (dict(pos_encoding_mode="ALIBI"), dict(alibi=True)),
    "rope": (dict(pos_encoding_mode="ROPE_LLAMA", rope_theta=1e4, rope_scale=2.0),
             dict(rope_args=(1e4, 2.0))),
    "softcap_window_scale": (dict(logits_soft_cap=20.0, window_left=100, sm_scale=0.1),
                             dict(soft_cap=20.0, window_left=100, sm_scale=0.1)),
}


# -- decode ---------------------------------------------------------------------

@requires_gpu
def test_chip_detected_and_first_plan_compiles():
    assert jit.detect_chip() == jit.chip_for_capability(*torch.cuda.get_device_capability())
    b = paged_batch([1] * 5, [300, 17, 1, 64, 999], seed=11)
    w = flashir.BatchDecodeWithPagedKVCacheWrapper(workspace(), "NHD")
    decode_plan(w, b, logits_soft_cap=7.0)
    assert w.compile_info["cached"] is False
    check(*w.run(b["q"], (b["k"], b["v"]), return_lse=True), *reference(b, soft_cap=7.0))
    w2 = flashir.BatchDecodeWithPagedKVCacheWrapper(workspace(), "NHD")
    decode_plan(w2, b, logits_soft_cap=7.0)
    assert w2.compile_info["cached"] is True


@requires_gpu
def test_decode_variants_and_layouts():
    for layout in ("NHD", "HND"):
        b = paged_batch([1] * 9, [700, 0, 16, 1, 3000, 77, 128, 33, 2], layout=layout, seed=1)
        w = flashir.BatchDecodeWithPagedKVCacheWrapper(workspace(), layout)
        for name, (plan_kw, ref_kw) in VARIANTS.items():
            decode_plan(w, b, **plan_kw)
            out, lse = w.run(b["q"], (b["k"], b["v"]), return_lse=True)
            rel = check(out, lse, *reference(b, **ref_kw))
            print(f"decode {layout} {name}: rel err {rel:.2e}")


@requires_gpu
def test_decode_head_dims_groups_and_dtypes():
    for hq, hkv, d, dtype in ((32, 32, 64, torch.float16), (16, 2, 256, torch.bfloat16),
                              (64, 8, 128, torch.float16), (8, 8, 128, torch.bfloat16),
                              (28, 4, 128, torch.bfloat16)):
        b = paged_batch([1] * 6, [1, 500, 31, 1024, 0, 200], hq=hq, hkv=hkv, d=d, dtype=dtype,
                        seed=d + hq)
        w = flashir.BatchDecodeWithPagedKVCacheWrapper(workspace())
        decode_plan(w, b)
        out = w.run(b["q"], (b["k"], b["v"]))
        assert out.shape == b["q"].shape and out.dtype == dtype
        ref_o, _ = reference(b)
        rel = ((out.double() - ref_o).norm() / ref_o.norm()).item()
        assert rel <= 1e-2, (hq, hkv, d, rel)


@requires_gpu
def test_one_wrapper_many_steps_and_page_sizes():
    w = flashir.BatchDecodeWithPagedKVCacheWrapper(workspace())
    for step, (page, lens) in enumerate([(16, [5, 100]), (1, [30, 2, 7]), (64, [1000] * 20),
                                         (16, [3] * 40), (16, [])]):
        b = paged_batch([1] * len(lens), lens, page=page, seed=step)
        decode_plan(w, b)
        out, lse = w.run(b["q"], (b["k"], b["v"]), return_lse=True)
        if lens:
            check(out, lse, *reference(b))
        else:
            assert out.shape[0] == 0


# -- prefill --------------------------------------------------------------------

QO = [1, 37, 300, 16, 129]
KV = [1, 37, 900, 1000, 129]


@requires_gpu
def test_prefill_paged_variants_and_layouts():
    for layout in ("NHD", "HND"):
        b = paged_batch(QO, KV, layout=layout, seed=3)
        w = flashir.BatchPrefillWithPagedKVCacheWrapper(workspace(), layout)
        for name, (plan_kw, ref_kw) in VARIANTS.items():
            for causal in (False, True):
                prefill_plan(w, b, causal=causal, **plan_kw)
                out, lse = w.run(b["q"], (b["k"], b["v"]), return_lse=True)
                rel = check(out, lse, *reference(b, causal=causal, **ref_kw))
                print(f"prefill {layout} {name} causal={causal}: rel err {rel:.2e}")


@requires_gpu
def test_prefill_head_dims_and_f16():
    for hq, hkv, d, dtype in ((16, 16, 64, torch.float16), (16, 4, 256, torch.bfloat16),
                              (32, 8, 128, torch.float16)):
        b = paged_batch([200, 1, 65], [200, 400, 65], hq=hq, hkv=hkv, d=d, dtype=dtype,
                        seed=d)
        w = flashir.BatchPrefillWithPagedKVCacheWrapper(workspace())
        prefill_plan(w, b, causal=True)
        check(*w.run(b["q"], (b["k"], b["v"]), return_lse=True), *reference(b, causal=True))


@requires_gpu
def test_prefill_custom_mask_bool_and_packed():
    b = paged_batch([5, 64, 1], [20, 100, 33], seed=5)
    gen = torch.Generator().manual_seed(9)
    masks = [torch.rand(q, k, generator=gen) < 0.6 for q, k in zip(b["qo_lens"], b["kv_lens"])]
    for m in masks:
        m[:, 0] = True  # every row sees a key
    flat = torch.cat([m.flatten() for m in masks])
    packed = torch.cat([torch.tensor(_pack_little(m.flatten()), dtype=torch.uint8)
                        for m in masks])
    ref = reference(b, masks=masks)
    w = flashir.BatchPrefillWithPagedKVCacheWrapper(workspace())
    prefill_plan(w, b, custom_mask=flat.cuda())
    check(*w.run(b["q"], (b["k"], b["v"]), return_lse=True), *ref)
    prefill_plan(w, b, packed_custom_mask=packed.cuda())
    check(*w.run(b["q"], (b["k"], b["v"]), return_lse=True), *ref)


def _pack_little(bits):
    out = []
    bits = bits.tolist()
    for i in range(0, len(bits), 8):
        out.append(sum(1 << j for j, bit in enumerate(bits[i:i + 8]) if bit))
    return out


@requires_gpu
def test_prefill_ragged_kv():
    gen = torch.Generator().manual_seed(21)
    qo, kv = [3, 100, 1], [50, 100, 7]
    hq, hkv, d = 32, 8, 128
    q = torch.randn(sum(qo), hq, d, generator=gen).to("cuda", torch.bfloat16)
    k = torch.randn(sum(kv), hkv, d, generator=gen).to("cuda", torch.bfloat16)
    v = torch.randn(sum(kv), hkv, d, generator=gen).to("cuda", torch.bfloat16)
    qo_indptr = torch.tensor([0, 3, 103, 104], dtype=torch.int32)
    kv_indptr = torch.tensor([0, 50, 150, 157], dtype=torch.int32)
    # The same data as a paged batch of one-token pages for the reference.
    b = dict(q=q, k=k.unsqueeze(1), v=v.unsqueeze(1), qo_indptr=qo_indptr,
             kv_indptr=kv_indptr, kv_indices=torch.arange(157, dtype=torch.int32),
             qo_lens=qo, kv_lens=kv, hq=hq, hkv=hkv, d=d, page=1, layout="NHD")
    w = flashir.BatchPrefillWithRaggedKVCacheWrapper(workspace(), "NHD")
    for causal in (False, True):
        w.plan(qo_indptr, kv_indptr, hq, hkv, d, causal=causal, q_data_type=torch.bfloat16)
        check(*w.run(q, k, v, return_lse=True), *reference(b, causal=causal))


# -- variants by name and as attn IR ---------------------------------------------

def rope_variant_ir():
    """The lit tests' RoPE variant (query and key hooks; parameters
    log2_theta f32 scalar, half_dim i32 scalar, offset i32 per request)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "test", "Conversion", "AttnToGPU", "variant-hooks.mlir")) as f:
        text = f.read()
    return re.search(r"^attn\.variant @rope .*?^}\n", text, re.S | re.M).group(0)


@requires_gpu
def test_variants_by_name_and_as_ir_with_parameters():
    rope_ir = rope_variant_ir()
    b = paged_batch([1] * 4, [100, 7, 1000, 33], seed=60)
    w = flashir.BatchDecodeWithPagedKVCacheWrapper(workspace())
    decode_plan(w, b, variant="sigmoid", variant_params=[-1.5])
    ref_o, _ = reference(b, sigmoid_bias=-1.5)
    out = w.run(b["q"], (b["k"], b["v"]))
    assert ((out.double() - ref_o).norm() / ref_o.norm()).item() <= 1e-2
    offsets = [0, 5, 100, 3]
    params = [math.log2(1e4), 64, torch.tensor(offsets, dtype=torch.int32, device="cuda")]
    decode_plan(w, b, variant=rope_ir, variant_params=params)
    check(*w.run(b["q"], (b["k"], b["v"]), return_lse=True),
          *reference(b, rope_args=(1e4, 1.0), rope_offsets=offsets))
    pb = paged_batch(QO, KV, seed=61)
    pw = flashir.BatchPrefillWithPagedKVCacheWrapper(workspace())
    offsets = [7, 0, 1, 2, 30]
    prefill_plan(pw, pb, variant=rope_ir, variant_params=[
        math.log2(1e4), 64, torch.tensor(offsets, dtype=torch.int32, device="cuda")])
    check(*pw.run(pb["q"], (pb["k"], pb["v"]), return_lse=True),
          *reference(pb, rope_args=(1e4, 1.0), rope_offsets=offsets))
    with raises(ValueError, match="variant is the whole attention"):
        prefill_plan(pw, pb, variant="sigmoid", variant_params=[0.0], causal=True)
    with raises(TypeError, match="variant_params"):
        decode_plan(w, b, variant=rope_ir, variant_params=[1.0])
    with raises(TypeError, match=r"params\[offset\] must be int32"):
        decode_plan(w, b, variant=rope_ir, variant_params=[
            13.0, 64, torch.zeros(4, dtype=torch.int64, device="cuda")])
        w.run(b["q"], (b["k"], b["v"]))


# -- cascade and merges ---------------------------------------------------------

@requires_gpu
def test_cascade_shared_prefix():
    batch, prefix_len, page = 8, 1000, 16
    suffix = [1, 16, 17, 100, 5, 64, 33, 2]
    b = paged_batch([1] * batch, [prefix_len + n for n in suffix], seed=13)
    # Rebuild as one shared prefix (the first request's prefix pages) plus
    # each request's own suffix pages.
    gen = torch.Generator().manual_seed(14)
    pp = (prefix_len + page - 1) // page
    pool = b["k"].shape[0]
    prefix_pages = torch.randperm(pool, generator=gen)[:pp].to(torch.int32)
    # Suffix pages must start at a page boundary: pad the prefix to whole pages.
    prefix_len = pp * page
    full = [prefix_len + n for n in suffix]
    sp = [(n + page - 1) // page for n in suffix]
    rest = [p for p in torch.randperm(pool, generator=gen).tolist()
            if p not in set(prefix_pages.tolist())]
    s_indptr, s_idx = [0], []
    for c in sp:
        s_idx += rest[len(s_idx):len(s_idx) + c]
        s_indptr.append(len(s_idx))
    s_last = [n - (c - 1) * page for n, c in zip(suffix, sp)]
    i32 = lambda x: torch.tensor(x, dtype=torch.int32)  # noqa: E731
    ref_b = dict(b, kv_lens=full,
                 kv_indptr=i32([0] + [sum(pp + c for c in sp[:i + 1]) for i in range(batch)]),
                 kv_indices=torch.cat([torch.cat([prefix_pages, i32(s_idx[s_indptr[i]:
                                                                         s_indptr[i + 1]])])
                                       for i in range(batch)]))
    w = flashir.MultiLevelCascadeAttentionWrapper(2, workspace(), "NHD")
    levels = ([i32([0, batch]), i32(list(range(batch + 1)))], [i32([0, pp]), i32(s_indptr)],
              [prefix_pages, i32(s_idx)], [i32([page]), i32(s_last)], 32, 8, 128, page)
    # Plain, then position-free variants with parameters (the soft-cap, a
    # scalar, goes to the prefix and suffix kernels alike).
    for kw, ref_kw in (({}, {}),
                       (dict(logits_soft_cap=1.5), dict(soft_cap=1.5)),
                       (dict(logits_soft_cap=3.0, sm_scale=0.2),
                        dict(soft_cap=3.0, sm_scale=0.2))):
        w.plan(*levels, q_data_type=torch.bfloat16, **kw)
        out = w.run(b["q"], (b["k"], b["v"]))
        ref_o, _ = reference(ref_b, **ref_kw)
        rel = ((out.double() - ref_o).norm() / ref_o.norm()).item()
        print(f"cascade {kw}: rel err {rel:.2e}")
        assert rel <= 1e-2, (kw, rel)
        if ref_kw:  # the cap changes the result: a run without it would fail
            uncapped, _ = reference(ref_b, sm_scale=ref_kw.get("sm_scale"))
            off = ((out.double() - uncapped).norm() / uncapped.norm()).item()
            assert off > 3e-2, (kw, off)
    for bad in (dict(causal=True), dict(window_left=64), dict(pos_encoding_mode="ALIBI")):
        with raises(ValueError, match=f"position-free.*{next(iter(bad))}"):
            w.plan(*levels, q_data_type=torch.bfloat16, **bad)


@requires_gpu
def test_merges_are_kernels_matching_float64():
    gen = torch.Generator().manual_seed(7)
    rows, n, h, d = 37, 5, 8, 128
    for dtype in (torch.bfloat16, torch.float16):
        v = torch.randn(rows, n, h, d, generator=gen).to("cuda", dtype)
        s = (torch.randn(rows, n, h, generator=gen) * 3).to("cuda")
        s[3, 1] = -math.inf  # an empty state
        s[4] = -math.inf  # a row of empty states
        ref_v, ref_s = flashir.merge._merge_torch(v.double(), s.double())
        mv, ms = flashir.merge_states(v, s)
        assert mv.dtype == dtype and ms.dtype == torch.float32
        finite = torch.isfinite(ref_s)
        assert (mv.double() - ref_v)[finite].abs().max().item() < 2e-2
        assert (ms.double() - ref_s)[finite].abs().max().item() < 1e-4
        assert bool((ms[~finite] == -math.inf).all()) and not torch.isnan(mv).any()
        a, b2 = flashir.merge_state(v[:, 0], s[:, 0], v[:, 1], s[:, 1])
        ref2 = flashir.merge._merge_torch(v[:, :2].double(), s[:, :2].double())
        assert (a.double() - ref2[0])[torch.isfinite(ref2[1])].abs().max().item() < 2e-2
        va, sa = v[:, 0].clone(), s[:, 0].clone()
        mask = torch.arange(rows, device="cuda") % 2 == 0
        flashir.merge_state_in_place(va, sa, v[:, 1], s[:, 1], mask=mask)
        assert torch.equal(va[~mask], v[:, 0][~mask])
        assert torch.allclose(va[mask].float(), a[mask].float(), atol=1e-2)
    with raises(ValueError, match="v_a and v_b"):
        flashir.merge_state(v[:, 0], s[:, 0], v[:2, 0], s[:2, 0])


# -- CUDA graphs ----------------------------------------------------------------

@requires_gpu
def test_cuda_graph_replays_changing_batches():
    """One graph captured at the first step replays every later step within
    the capacity: plan() rewrites the page table, the page ids and the
    per-request parameters in place; the grids are the capacity's."""
    cap = 16
    w = flashir.BatchDecodeWithPagedKVCacheWrapper(
        workspace(), "NHD", use_cuda_graph=True,
        paged_kv_indptr_buffer=torch.zeros(cap + 1, dtype=torch.int32, device="cuda"),
        paged_kv_indices_buffer=torch.zeros(4096, dtype=torch.int32, device="cuda"),
        paged_kv_last_page_len_buffer=torch.zeros(cap, dtype=torch.int32, device="cuda"))
    assert w.is_cuda_graph_enabled
    pool = paged_batch([1] * cap, [250] * cap, seed=30, extra_pages=300)
    q_buf = torch.zeros(cap, 32, 128, dtype=torch.bfloat16, device="cuda")
    steps = [[5, 900, 17], [1] * 16, [2000, 1, 1, 300, 64], [129] * 9]
    graph = full = None
    for i, lens in enumerate(steps):
        b = paged_batch([1] * len(lens), lens, seed=40 + i, extra_pages=0)
        n = b["k"].shape[0]  # this step's pages, written into the pool's first ones
        pool["k"][:n].copy_(b["k"])
        pool["v"][:n].copy_(b["v"])
        decode_plan(w, b, window_left=50 + i)
        q_buf.zero_()
        q_buf[:len(lens)].copy_(b["q"])
        if graph is None:
            w.run(q_buf[:len(lens)], (pool["k"], pool["v"]))  # warm-up outside the capture
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                o = w.run(q_buf[:len(lens)], (pool["k"], pool["v"]))
            # The output's capacity rows (the graph writes each step's).
            full = torch.as_strided(o, (cap, 32, 128), o.stride(), o.storage_offset())
        graph.replay()
        torch.cuda.synchronize()
        ref_o, _ = reference(b, window_left=50 + i)
        rel = ((full[:len(lens)].double() - ref_o).norm() / ref_o.norm()).item()
        assert rel <= 1e-2, (i, rel)
    with raises(ValueError, match="capacity"):
        decode_plan(w, paged_batch([1] * (cap + 1), [3] * (cap + 1)))
    small = flashir.BatchDecodeWithPagedKVCacheWrapper(
        workspace(), use_cuda_graph=True,
        paged_kv_indices_buffer=torch.zeros(8, dtype=torch.int32, device="cuda"))
    with raises(ValueError, match="paged_kv_indices_buffer"):
        decode_plan(small, paged_batch([1, 1], [100, 100]))
    decode_plan(small, paged_batch([1, 1], [10, 20]))  # still usable within it


# -- bad input ------------------------------------------------------------------

@requires_gpu
def test_bad_inputs_name_the_argument_and_leave_the_wrapper_usable():
    b = paged_batch([1] * 4, [40, 1, 16, 100], seed=50)
    w = flashir.BatchDecodeWithPagedKVCacheWrapper(workspace())
    i32 = lambda x: torch.tensor(x, dtype=torch.int32)  # noqa: E731
    args = [b["kv_indptr"], b["kv_indices"], b["last"], 32, 8, 128, 16]

    def plan_with(i, value, **kw):
        a = list(args)
        a[i] = value
        w.plan(*a, q_data_type=torch.bfloat16, **kw)

    plan_cases = [
        (lambda: plan_with(0, i32([0, 3, 2, 4, 11])), ValueError, "indptr decreases"),
        (lambda: plan_with(0, b["kv_indptr"].float()), TypeError, "indptr must be int32"),
        (lambda: plan_with(0, i32([0, 3, 4])), ValueError, "indptr needs 5 entries"),
        (lambda: plan_with(1, b["kv_indices"][:3]), ValueError, "indices has 3 entries"),
        (lambda: plan_with(1, torch.full_like(b["kv_indices"], -2)), IndexError,
         "negative page id"),
        (lambda: plan_with(2, i32([8, 0, 16, 4])), ValueError, r"last_page_len\[1\] is 0"),
        (lambda: plan_with(2, i32([8, 1, 17, 4])), ValueError, r"last_page_len\[2\] is 17"),
        (lambda: plan_with(3, 30), ValueError, "multiple of num_kv_heads"),
        (lambda: plan_with(5, 12), flashir.JitError, "head"),
        (lambda: plan_with(0, b["kv_indptr"], kv_data_type=torch.float16), ValueError,
         "kv_data_type"),
        (lambda: plan_with(0, b["kv_indptr"], pos_encoding_mode="ROPE"), ValueError,
         "pos_encoding_mode"),
        (lambda: plan_with(0, b["kv_indptr"], window_left=1.5), TypeError, "window_left"),
        (lambda: flashir.BatchDecodeWithPagedKVCacheWrapper(workspace(), "NDH"), ValueError,
         "kv_layout"),
        (lambda: flashir.BatchDecodeWithPagedKVCacheWrapper(torch.empty(8)), TypeError,
         "float_workspace_buffer"),
    ]
    for call, error, needle in plan_cases:
        with raises(error, match=needle):
            call()
    decode_plan(w, b)
    q, k, v = b["q"], b["k"], b["v"]
    run_cases = [
        (lambda: w.run(q.half(), (k, v)), TypeError, "q must be torch.bfloat16"),
        (lambda: w.run(q.cpu(), (k, v)), ValueError, "q must be a CUDA tensor"),
        (lambda: w.run(q[:3], (k, v)), ValueError, r"q must be \[4, 32, 128\]"),
        (lambda: w.run(q.transpose(1, 2).contiguous().transpose(1, 2), (k, v)), ValueError,
         "q must be contiguous"),
        (lambda: w.run(q, (k[..., :64], v)), ValueError, r"paged_kv_cache\[0\] must be"),
        (lambda: w.run(q, (k, v[:, :, :, :64].contiguous())), ValueError,
         r"paged_kv_cache\[1\] must be"),
        (lambda: w.run(q, (k[:2], v[:2])), IndexError, r"paged_kv_cache\[0\] holds 2 pages"),
        (lambda: w.run(q, torch.stack([k, v], 1)), ValueError, "separate"),
        (lambda: w.run(q, (k, v), q_scale=2.0), ValueError, "q_scale"),
        (lambda: w.run(q, (k, v), out=torch.empty(1, device="cuda")), ValueError,
         "out must be"),
    ]
    for call, error, needle in run_cases:
        with raises(error, match=needle):
            call()
    # Still usable: a valid step after every refusal.
    decode_plan(w, b)
    check(*w.run(q, (k, v), return_lse=True), *reference(b))
    with raises(RuntimeError, match="run\\(\\) before plan\\(\\)"):
        flashir.BatchPrefillWithPagedKVCacheWrapper(workspace()).run(q, (k, v))


if __name__ == "__main__":
    run_as_script(globals(), HAVE_GPU and HAVE_COMPILER, "needs a CUDA GPU and flashir-bundle")

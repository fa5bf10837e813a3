"""GPU check and benchmark of FlashIR's decode kernels (run on the GPU machine).

Loads a kernel bundle (manifest.json + PTX/cubin per chip, written by
flashir-bundle), launches its kernels through the CUDA driver API (ctypes on
libcuda; PyTorch only allocates memory and computes references), checks them
against a float64 reference on fresh random paged batches, and times them next
to PyTorch SDPA (cuDNN and FlashAttention-2 backends, contiguous KV) and
FlexAttention in the same process.

    python3 bench/gpu/gpu_check.py --bundle build-gpu/bundle --out $OUT
"""

import argparse
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

# ---------------------------------------------------------------------------
# CUDA driver API through ctypes
# ---------------------------------------------------------------------------

_cuda = ctypes.CDLL("libcuda.so.1")


def _check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        _cuda.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: {name.value.decode() if name.value else rc}")


class Module:
    """A loaded PTX or cubin image and its kernels."""

    def __init__(self, image: bytes):
        torch.cuda.init()
        torch.empty(1, device="cuda")  # the primary context is now current
        self.handle = ctypes.c_void_p()
        _check(_cuda.cuModuleLoadData(ctypes.byref(self.handle), ctypes.c_char_p(image)),
               "cuModuleLoadData")

    def function(self, name):
        fn = ctypes.c_void_p()
        _check(_cuda.cuModuleGetFunction(ctypes.byref(fn), self.handle, name.encode()),
               f"cuModuleGetFunction({name})")
        return fn


def cuda_function(source, name, out_dir, arch="sm_90a"):
    """Kernel `name` of CUDA C++ `source`, compiled by nvcc into a cubin
    (name.cu / name.cubin under out_dir) and loaded (the probes' helper
    kernels)."""
    src = os.path.join(out_dir, name + ".cu")
    with open(src, "w") as f:
        f.write(source)
    cubin = os.path.join(out_dir, name + ".cubin")
    subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-o", cubin, src], check=True)
    with open(cubin, "rb") as f:
        return Module(f.read()).function(name)


class _LaunchAttribute(ctypes.Structure):
    """cuda.h's CUlaunchAttribute: an id and a 64-byte value union."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int),
                ("rest", ctypes.c_char * 60)]


class _LaunchConfig(ctypes.Structure):
    """cuda.h's CUlaunchConfig."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttribute)), ("num_attrs", ctypes.c_uint)]


def prepare_launch(fn, grid, block, args, shared=0, programmatic=False):
    """A callable launching `fn` on the current stream; the kernel parameter
    array is packed once here, not per launch (packing ~60 ctypes values
    costs tens of microseconds of Python). args: ctypes scalars, kept alive
    by the callable; shared: dynamic shared memory bytes; programmatic:
    with programmatic stream serialization (cuLaunchKernelEx): `fn` may
    start once the preceding grid's CTAs have all triggered
    (griddepcontrol.launch_dependents) and sees its writes after
    griddepcontrol.wait."""
    params = (ctypes.c_void_p * len(args))(
        *[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    if programmatic:
        attr = _LaunchAttribute(id=6, value=1)  # PROGRAMMATIC_STREAM_SERIALIZATION
        config = _LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(block, 1, 1),
                               shared, stream, ctypes.pointer(attr), 1)

        def call():
            _check(_cuda.cuLaunchKernelEx(ctypes.byref(config), fn, params, None),
                   "cuLaunchKernelEx")
        call.keep = (args, params, attr, config)
        return call

    def call():
        _check(_cuda.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block, 1, 1, shared,
                                    stream, params, None), "cuLaunchKernel")
    call.keep = (args, params)
    return call


def allow_shared(fn, nbytes):
    """Opts `fn` in to more than 48 KiB of dynamic shared memory."""
    if nbytes > 48 * 1024:
        _check(_cuda.cuFuncSetAttribute(fn, 8, ctypes.c_int(nbytes)),  # MAX_DYNAMIC_SHARED_SIZE_BYTES
               "cuFuncSetAttribute")


def memref_args(t: torch.Tensor, strided=False):
    """MLIR's expanded memref descriptor: allocated, aligned, offset, sizes,
    strides. `strided`: a permuted view of a contiguous tensor (an HND pool
    in the kernels' logical (page, slot, head, column) order)."""
    assert t.is_contiguous() or strided
    p = ctypes.c_void_p(t.data_ptr())
    vals = [p, ctypes.c_void_p(t.data_ptr()), ctypes.c_int64(0)]
    vals += [ctypes.c_int64(s) for s in t.shape]
    vals += [ctypes.c_int64(s) for s in t.stride()]
    return vals


# ---------------------------------------------------------------------------
# Batches and the reference
# ---------------------------------------------------------------------------

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


class Kernel:
    """A decode or prefill kernel of the bundle; split-KV ones (partial
    states) carry their merge kernel."""

    def __init__(self, entry, fn, shared=0):
        self.name = entry["name"]
        self.fn = fn
        self.shared = shared  # dynamic shared memory (tensor-core kernels)
        self.block = entry["block"]
        self.variant = entry.get("variant", "plain")
        args = entry["args"]
        # Arguments by role (manifest ABI 4); parameters have role "param".
        idx = {a["role"]: i for i, a in enumerate(args) if a["role"] != "param"}
        q, pool = args[idx["q"]], args[idx["k_pool"]]
        self.hq, self.d = q["shape"][1], q["shape"][2]
        self.page, self.hkv = pool["shape"][1], pool["shape"][2]
        self.dtype = DTYPES[q["element"]]
        # HND pools: [pages, Hkv, page, D] in memory (shapes stay logical).
        self.hnd = entry.get("kv_layout") == "hnd"
        # Ragged views: the pools are the keys' contiguous rows (one-token
        # pages in token order) and the kernel takes no page table.
        self.ragged = entry.get("kv_layout") == "ragged"
        self.merge_kernel = entry.get("merge_kernel")  # split-KV kernels
        self.chunked = self.merge_kernel is not None
        # Prefill kernels: grid (requests, q tiles of q_rows rows, Hq).
        self.q_rows = entry.get("q_rows")
        # Tokens per q tile (fewer than rows when head groups are fused; the
        # grid's z is then the KV heads).
        self.q_tokens = entry.get("q_tokens", self.q_rows)
        self.grid_z = "num_kv_heads" if entry["grid"].endswith("x num_kv_heads") else "num_qo_heads"
        self.params = [a for a in args if a["role"] == "param"]
        self.box = None  # tensor-map box (kernels with tensor copies)
        self.persistent = False  # the chip's `persistent` fact
        self.merge = None  # (function, block) of a split-KV kernel
        # KV views whose keys the kernel attends concatenated (manifest ABI
        # 5: view arguments past the first view carry "view").
        self.views = 1 + max((a.get("view", 0) for a in args), default=0)

    def q_tiles_and_heads(self, qo_lens, rows=None):
        """A prefill kernel's grid y and z: q tiles of the longest request,
        query heads (or KV heads with fused head groups). A persistent
        kernel (its CTAs walk the whole grid) over `rows` grid rows gets
        only the heads' planes that give each SM a CTA, as the runtime's
        launcher gives it."""
        y = max(1, -(-max(qo_lens) // self.q_tokens))
        z = self.hkv if self.grid_z == "num_kv_heads" else self.hq
        if self.persistent and rows:
            sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
            z = min(z, -(-sms // (rows * y)))  # abi::persistentGridZ
        return y, z


def load_kernels(manifest, module, chip):
    facts = [t for t in manifest["targets"] if t["chip"] == chip][0].get("kernels", {})
    kernels, merges = {}, {}
    for e in manifest["kernels"]:
        if e["kind"] == "merge":
            merges[e["name"]] = (module.function(e["name"]), e["block"])
        else:
            shared = facts.get(e["name"], {}).get("dynamic_shared_memory_bytes", 0)
            fn = module.function(e["name"])
            allow_shared(fn, shared)
            kernels[e["name"]] = Kernel(e, fn, shared)
            kernels[e["name"]].box = facts.get(e["name"], {}).get("tensor_map_box")
            kernels[e["name"]].persistent = facts.get(e["name"], {}).get("persistent", False)
    for k in kernels.values():
        if k.chunked:
            k.merge = merges[k.merge_kernel]
    return kernels


def plan_chunks(kv_lens, chunk_len, empty_chunks=False):
    """Split-KV plan (the runtime planner's job; issue 6): each request's keys
    in chunks of chunk_len; optionally an extra empty chunk per request."""
    indptr, request, starts, ends = [0], [], [], []
    for b, n in enumerate(kv_lens):
        for s0 in range(0, n, chunk_len):
            request.append(b)
            starts.append(s0)
            ends.append(min(n, s0 + chunk_len))
        if empty_chunks:
            request.append(b)
            starts.append(n)
            ends.append(n)
        indptr.append(len(request))
    return indptr, request, starts, ends


def mask_bits(qo_lens, kv_lens, gen, pattern="mixed"):
    """A bit-packed custom mask (little bit order, no padding byte): request
    b's rows start at bit base[b], `stride` bits each (Lkv + 5: rows start
    mid-byte). Patterns: "random" bits; "causal" (bottom-right); "segments"
    (causal, keys of every other 160-key segment hidden: whole tiles without
    a visible key between visible ones); "none" and "all" (no key, every key
    visible: probes); "mixed" cycles the first three over the requests."""
    strides = [n + 5 for n in kv_lens]
    base = [0]
    for n, st in zip(qo_lens, strides):
        base.append(base[-1] + n * st)
    flat = torch.zeros(max(base[-1], 1), dtype=torch.bool)
    kinds = ["random", "causal", "segments"]
    for b, (lq, lk) in enumerate(zip(qo_lens, kv_lens)):
        kind = kinds[b % 3] if pattern == "mixed" else pattern
        qpos = torch.arange(lq)[:, None] + (lk - lq)
        kpos = torch.arange(strides[b])[None, :]
        if kind == "random":
            rows = torch.randint(0, 2, (lq, strides[b]), generator=gen).bool()
        elif kind in ("none", "all"):
            rows = torch.full((lq, strides[b]), kind == "all")
        else:
            rows = kpos <= qpos
            if kind == "segments":
                rows &= (kpos // 160) % 2 == 0
        flat[base[b]:base[b + 1]] = rows.reshape(-1)
    pad = (-flat.numel()) % 8
    flat = torch.cat([flat, torch.zeros(pad, dtype=torch.bool)]).view(-1, 8)
    weights = torch.tensor([1 << i for i in range(8)], dtype=torch.int32)
    bits = (flat.int() * weights).sum(dim=1).to(torch.uint8)
    return bits, strides, base


def make_batch(k: Kernel, qo_lens, kv_lens, gen, shared_pages=True, shuffle=True,
               nan_unowned=False, mask_pattern="mixed"):
    """Ragged queries; KV pool of shuffled pages (plus spares; in pool order
    when not `shuffle`), optionally a page shared by every request; random
    values everywhere (NaN would be caught as well, but spares hold random
    data so timing is not flattered)."""
    dev = "cuda"
    if k.ragged:  # request b's keys: rows indptr[b] .. indptr[b + 1]
        shared_pages = shuffle = False
    pages_per = [(n + k.page - 1) // k.page for n in kv_lens]
    num_pages = sum(pages_per) + 8
    perm = torch.randperm(num_pages, generator=gen).tolist() if shuffle else list(range(num_pages))
    indptr, indices, last = [0], [], []
    for n, p in zip(kv_lens, pages_per):
        indices += perm[len(indices):len(indices) + p]
        indptr.append(len(indices))
        last.append(n - (p - 1) * k.page if p else 0)
    if shared_pages:
        full = [b for b, n in enumerate(kv_lens) if n >= k.page]
        for b in full[1:]:
            indices[indptr[b]] = indices[indptr[full[0]]]
    shape = (num_pages, k.page, k.hkv, k.d)
    kp = torch.randn(shape, generator=gen, dtype=torch.float32)
    vp = torch.randn(shape, generator=gen, dtype=torch.float32)
    if nan_unowned:
        # NaN in every slot no request owns (spare pages, the tails of last
        # pages): a kernel that reads one and lets it reach a sum fails.
        owned = torch.zeros(num_pages, k.page, dtype=torch.bool)
        for b, n in enumerate(kv_lens):
            for j in range(n):
                owned[indices[indptr[b] + j // k.page], j % k.page] = True
        kp[~owned] = float("nan")
        vp[~owned] = float("nan")
    kp, vp = kp.to(dev, k.dtype), vp.to(dev, k.dtype)
    qo = [0]
    for n in qo_lens:
        qo.append(qo[-1] + n)
    q = torch.randn((qo[-1], k.hq, k.d), generator=gen, dtype=torch.float32).to(dev, k.dtype)
    i32 = lambda x: torch.tensor(x if x else [0], dtype=torch.int32, device=dev)
    batch = dict(q=q, qo=i32(qo), kp=kp, vp=vp, indptr=i32(indptr),
                 indices=i32(indices), last=i32(last), qo_lens=qo_lens,
                 kv_lens=kv_lens, indptr_l=indptr, indices_l=indices)
    # Variant parameters: ("scalar", value, ctype) or ("tensor", tensor).
    params = []
    for p in k.params:
        name = p["name"]
        if k.variant == "soft_cap":
            params.append(("scalar", 2.0, ctypes.c_float))
        elif k.variant == "sigmoid":
            params.append(("scalar", -1.5, ctypes.c_float))
        elif k.variant.startswith("rope") and name == "log2_theta":
            params.append(("scalar", math.log2(10000.0), ctypes.c_float))
        elif k.variant.startswith("rope") and name == "half_dim":
            params.append(("scalar", k.d // 2, ctypes.c_int32))
        elif k.variant.startswith("rope") and name == "offset":
            off = torch.randint(0, 1000, (len(kv_lens),), generator=gen, dtype=torch.int32)
            params.append(("tensor", off.to(dev)))
        elif k.variant == "custom_mask" and name == "bits":
            bits, strides, base = mask_bits(qo_lens, kv_lens, gen, mask_pattern)
            batch["mask_strides"], batch["mask_base"] = strides, base
            params.append(("tensor", bits.to(dev)))
        elif k.variant == "custom_mask" and name == "row0":
            # Bit of (qpos, kpos) = row0 + qpos * stride + kpos, qpos from Lkv - Lq.
            row0 = [batch["mask_base"][b] - (kv_lens[b] - qo_lens[b]) * batch["mask_strides"][b]
                    for b in range(len(kv_lens))]
            params.append(("tensor", torch.tensor(row0, dtype=torch.int64, device=dev)))
        elif k.variant == "custom_mask" and name == "stride":
            params.append(("tensor", torch.tensor(batch["mask_strides"], dtype=torch.int64,
                                                  device=dev)))
        elif k.variant == "sliding_window":
            w = [int(torch.randint(-1, max(n, 1) + 1, (1,), generator=gen)) for n in kv_lens]
            params.append(("tensor", torch.tensor(w, dtype=torch.int32, device=dev)))
        elif k.variant == "alibi":
            s = [2.0 ** (-8.0 * (h + 1) / k.hq) for h in range(k.hq)]
            params.append(("tensor", torch.tensor(s, dtype=torch.float32, device=dev)))
    batch["params"] = params
    batch["param"] = {p["name"]: v[1] for p, v in zip(k.params, params)}
    if k.views > 1:
        batch["views"] = split_views(k, batch, gen, nan_unowned)
    return batch


def split_views(k: Kernel, batch, gen, nan_unowned):
    """A kernel over k.views KV views: each request's keys (those the
    reference reads through the batch's page table) cut at random points
    into k.views runs, some empty, each run re-paged into its view's own
    pool (shuffled pages, NaN in unowned slots). Returns per view the
    kernel's view arguments (k_pool, v_pool, indptr[, indices,
    last_page_len])."""
    dev, P = "cuda", k.page
    keys = []  # per request: (K, V) rows [L, Hkv, D]
    for b, n in enumerate(batch["kv_lens"]):
        pages = batch["indices_l"][batch["indptr_l"][b]:batch["indptr_l"][b + 1]]
        keys.append(tuple(pool[pages].reshape(-1, k.hkv, k.d)[:n]
                          for pool in (batch["kp"], batch["vp"])))
    cuts = []
    for n in batch["kv_lens"]:
        c = sorted(int(x) for x in torch.randint(0, n + 1, (k.views - 1,), generator=gen))
        cuts.append([0] + c + [n])
    views = []
    for v in range(k.views):
        lens = [c[v + 1] - c[v] for c in cuts]
        pages_per = [(n + P - 1) // P for n in lens]
        num_pages = sum(pages_per) + 3
        perm = list(range(num_pages)) if k.ragged else \
            torch.randperm(num_pages, generator=gen).tolist()
        fill = float("nan") if nan_unowned else 0.0
        kp = torch.full((num_pages, P, k.hkv, k.d), fill, dtype=k.dtype, device=dev)
        vp = torch.full_like(kp, fill)
        if not nan_unowned:
            kp.normal_()
            vp.normal_()
        indptr, indices, last = [0], [], []
        for b, (n, p) in enumerate(zip(lens, pages_per)):
            mine = perm[len(indices):len(indices) + p]
            indices += mine
            indptr.append(len(indices))
            last.append(n - (p - 1) * P if p else 0)
            if n:
                at = torch.arange(n)
                page = torch.tensor(mine, dtype=torch.long)[at // P].to(dev)
                slot = (at % P).to(dev)
                kp[page, slot] = keys[b][0][cuts[b][v]:cuts[b][v] + n]
                vp[page, slot] = keys[b][1][cuts[b][v]:cuts[b][v] + n]
        i32 = lambda x: torch.tensor(x if x else [0], dtype=torch.int32, device=dev)
        group = [kp, vp, i32(indptr)]
        if not k.ragged:
            group += [i32(indices), i32(last)]
        views.append(group)
    return views


# CU_TENSOR_MAP_L2_PROMOTION_* of the tensor maps (0 none, 1 64B, 2 128B,
# 3 256B). The C++ runtime's choice is 2: on the H200, 256-byte promotion of
# the 128-byte box rows cost ~9% of the decode bandwidth (bench/gpu/probes/
# l2_promotion.py).
L2_PROMOTION = 2


def kv_map_geometry(k: Kernel, pages: int):
    """abi::kvTensorMap's dimensions and byte strides (innermost first) for
    the kernel's box: three extents, NHD (D, Hkv, pages * page) and HND (D,
    page, pages * Hkv); five (grouped: 8-key groups over every 64-column
    box), NHD (64, 8, D / 64, Hkv, pages * page / 8) and HND (64, 8, D / 64,
    page / 8, pages * Hkv)."""
    row = k.d * 2
    if len(k.box) == 5:
        boxes, groups = k.d // k.box[0], k.page // 8
        if k.hnd:
            return ((k.box[0], 8, boxes, groups, pages * k.hkv),
                    (row, k.box[0] * 2, 8 * row, k.page * row))
        slot = k.hkv * row
        return ((k.box[0], 8, boxes, k.hkv, pages * groups),
                (slot, k.box[0] * 2, row, 8 * slot))
    if k.hnd:
        return (k.d, k.page, pages * k.hkv), (row, k.page * row)
    return (k.d, k.hkv, pages * k.page), (row, k.hkv * row)


def kv_maps(k: Kernel, kp: torch.Tensor, vp: torch.Tensor):
    """The kernel's kv_maps argument: CUtensorMaps over the K and V pools as
    abi::kvTensorMap lays them out (kv_map_geometry), with the manifest's
    box, the box rows' swizzle and zeros past D; zeros where the kernel has
    no tensor copies."""
    maps = torch.zeros(2, 16, dtype=torch.int64)
    if k.box:
        raw = ctypes.create_string_buffer(128 + 64)
        at = (ctypes.addressof(raw) + 63) // 64 * 64  # CUtensorMap alignment
        u64, u32 = ctypes.c_uint64, ctypes.c_uint32
        rank = len(k.box)
        dim_list, stride_list = kv_map_geometry(k, kp.shape[0])
        dims = (u64 * rank)(*dim_list)
        strides = (u64 * (rank - 1))(*stride_list)
        box = (u32 * rank)(*k.box)
        ones = (u32 * rank)(*([1] * rank))
        swizzle = {128: 3, 64: 2, 32: 1}[k.box[0] * 2]
        for which, pool in enumerate((kp, vp)):
            _check(_cuda.cuTensorMapEncodeTiled(
                ctypes.c_void_p(at), 9 if k.dtype == torch.bfloat16 else 6, rank,
                ctypes.c_void_p(pool.data_ptr()), dims, strides, box, ones,
                0, swizzle, L2_PROMOTION, 0),  # no interleave; OOB reads zeros
                "cuTensorMapEncodeTiled")
            maps[which] = torch.frombuffer(bytearray(ctypes.string_at(at, 128)), dtype=torch.int64)
    return maps.cuda()


def run_kernel(k: Kernel, batch, chunk_len=512, empty_chunks=False, merge=True):
    """Returns out, lse and a callable launching the kernel(s); merge=False:
    a split-KV kernel without its merge kernel (calibration)."""
    total = batch["q"].shape[0]
    out = torch.full((total, k.hq, k.d), float("nan"), dtype=k.dtype, device="cuda")
    lse = torch.full((total, k.hq), float("nan"), dtype=torch.float32, device="cuda")
    args = []
    # The kernel's KV views: the batch's page table, or the groups
    # split_views made for a kernel over several views.
    groups = batch["views"] if k.views > 1 else [
        [batch["kp"], batch["vp"], batch["indptr"]]
        + ([] if k.ragged else [batch["indices"], batch["last"]])]
    fixed, pools = [batch["q"], batch["qo"]], []
    for group in groups:
        view_pools = group[:2]
        # HND kernels read pools laid out [pages, Hkv, page, D]: a physical
        # copy of the view's pools, passed as its logical view.
        if k.hnd:
            view_pools = [p.permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)
                          for p in view_pools]
        pools += view_pools
        fixed += view_pools + group[2:]
    for t in fixed:
        args += memref_args(t, strided=k.hnd)
    maps = kv_maps(k, pools[0], pools[1])  # over the layout the kernel reads
    params = memref_args(maps)  # kv_maps comes right before the parameters
    for kind, value, *ctype in batch["params"]:
        params += [ctype[0](value)] if kind == "scalar" else memref_args(value)
    batch_size = len(batch["qo_lens"])
    if not k.chunked:
        args += memref_args(out) + memref_args(lse) + params
        grid = (batch_size, k.hkv, 1)
        if k.q_rows:
            grid = (batch_size, *k.q_tiles_and_heads(batch["qo_lens"], batch_size))

        call_one = prepare_launch(k.fn, grid, k.block, args, k.shared)
        # The launch holds raw pointers: the callable keeps its buffers alive.
        call_one.buffers = (out, lse, maps, pools)
        return out, lse, call_one
    cindptr, creq, cstart, cend = plan_chunks(batch["kv_lens"], chunk_len, empty_chunks)
    i32 = lambda x: torch.tensor(x if x else [0], dtype=torch.int32, device="cuda")
    num_chunks = len(creq)
    # Dispatch order, longest chunk first like the runtime planner's.
    order = sorted(range(num_chunks), key=lambda c: (cstart[c] - cend[c], c))
    chunks = [i32(cindptr), i32(creq), i32(cstart), i32(cend), i32(order)]
    rows = max(1, num_chunks * max(batch["qo_lens"]))
    # Garbage in the workspace: every row the merge reads must be written.
    # Partial O is in the element type, lse in f32.
    part_o = torch.full((rows, k.hq, k.d), float("nan"), dtype=k.dtype, device="cuda")
    part_lse = torch.full((rows, k.hq), float("nan"), device="cuda")
    args += memref_args(chunks[0]) + memref_args(chunks[1][:num_chunks]) + \
        memref_args(chunks[2]) + memref_args(chunks[3]) + memref_args(chunks[4]) + \
        memref_args(part_o) + memref_args(part_lse) + \
        memref_args(out) + memref_args(lse) + params
    margs = memref_args(batch["qo"]) + memref_args(chunks[0]) + memref_args(part_o) + \
        memref_args(part_lse) + memref_args(out) + memref_args(lse)
    mfn, mblock = k.merge
    grid = (num_chunks, k.hkv, 1)
    if k.q_rows:  # split-KV prefill: (chunks, q tiles, heads)
        grid = (num_chunks, *k.q_tiles_and_heads(batch["qo_lens"], num_chunks))
    attention = prepare_launch(k.fn, grid, k.block, args, k.shared)
    merging = prepare_launch(mfn, (batch_size, k.hq, 1), mblock, margs)

    def call():
        if num_chunks:
            attention()
        if merge:
            merging()
    call.keep = (chunks, part_o, part_lse, out, lse, maps, pools)
    return out, lse, call


def rope64(x, pos, log2_theta):
    """Rotate-half RoPE in float64: x [L, H, D] at positions pos [L]."""
    d = x.shape[-1]
    half = d // 2
    i = torch.arange(d, device=x.device) % half
    freq = torch.pow(2.0, -log2_theta * i.double() / half)
    angle = pos.double()[:, None] * freq[None, :]  # [L, D]
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * torch.cos(angle)[:, None, :] + rot * torch.sin(angle)[:, None, :]


def reference(k: Kernel, batch):
    """float64: gather each request's keys through its page table, masked
    softmax with the variant's logits and mask."""
    q64 = batch["q"].double()
    kp, vp = batch["kp"].double(), batch["vp"].double()
    # Per output element, the magnitude its rounding error scales with
    # (batch["ref_mag"]): |o|, or for sigmoid's unnormalised sums sum w |v|.
    mags = []
    g = k.hq // k.hkv
    outs, lses = [], []
    row = 0
    scale = 1.0 / math.sqrt(k.d)
    for b, (lq, lkv) in enumerate(zip(batch["qo_lens"], batch["kv_lens"])):
        pages = batch["indices_l"][batch["indptr_l"][b]:batch["indptr_l"][b + 1]]
        if lkv:
            kh = kp[pages].reshape(-1, k.hkv, k.d)[:lkv].repeat_interleave(g, dim=1)  # [L, Hq, D]
            vh = vp[pages].reshape(-1, k.hkv, k.d)[:lkv].repeat_interleave(g, dim=1)
        if lq == 0:
            continue
        if lkv == 0:
            outs.append(torch.zeros(lq, k.hq, k.d, dtype=torch.float64, device="cuda"))
            mags.append(outs[-1])
            lses.append(torch.full((lq, k.hq), -math.inf, dtype=torch.float64, device="cuda"))
            row += lq
            continue
        # All of the request's rows at once: s[h, i, l].
        qr = q64[row:row + lq]  # [Lq, Hq, D]
        qpos = torch.arange(lq, device="cuda") + (lkv - lq)
        kpos = torch.arange(lkv, device="cuda")
        if k.variant.startswith("rope"):
            # The kernels feed the rotated q and k to the tensor cores in
            # the element type, as a cache storing keys after RoPE does:
            # the reference rounds them the same way.
            off = int(batch["param"]["offset"][b])
            lt = batch["param"]["log2_theta"]
            qr = rope64(qr, qpos + off, lt).to(k.dtype).double()
            kh = rope64(kh, kpos + off, lt).to(k.dtype).double()
        s = torch.einsum("ihd,lhd->hil", qr, kh) * scale
        keep = torch.ones(lq, lkv, dtype=torch.bool, device="cuda")
        if k.variant in ("causal", "soft_cap", "alibi", "sliding_window"):
            keep &= kpos[None, :] <= qpos[:, None]
        if k.variant == "soft_cap":
            cap = batch["params"][0][1]
            s = cap * torch.tanh(s / cap)
        if k.variant == "alibi":
            slopes = batch["params"][0][1].double()
            s = s + slopes[:, None, None] * (kpos[None, :] - qpos[:, None]).double()[None]
        if k.variant == "sliding_window":
            w = int(batch["params"][0][1][b])
            if w >= 0:
                keep &= (kpos[None, :] + w >= qpos[:, None])
        if k.variant == "custom_mask":
            bits = batch["params"][0][1].long()
            row0, stride = int(batch["params"][1][1][b]), int(batch["params"][2][1][b])
            bit = row0 + qpos[:, None] * stride + kpos[None, :]
            keep &= ((bits[bit >> 3] >> (bit & 7)) & 1).bool()
        if k.variant == "sigmoid":
            s = s + batch["params"][0][1]
            w = torch.sigmoid(s).masked_fill(~keep[None], 0.0)
            total = w.sum(dim=2)  # [Hq, Lq]
            outs.append(torch.einsum("hil,lhd->ihd", w, vh))
            # Unnormalised sums: each term's rounding scales with w |v|.
            mags.append(torch.einsum("hil,lhd->ihd", w, vh.abs()))
            lses.append(torch.log(total).transpose(0, 1))
            row += lq
            continue
        s = s.masked_fill(~keep[None], -math.inf)
        lse = torch.logsumexp(s, dim=2)  # [Hq, Lq]
        p = torch.exp(s - lse[:, :, None]).nan_to_num(0.0)
        o = torch.einsum("hil,lhd->ihd", p, vh)
        o[~keep.any(dim=1)] = 0
        if k.variant == "scaled_out":
            o = o * 0.5
        outs.append(o)
        mags.append(o.abs())
        lses.append(lse.transpose(0, 1))
        del s, p
        row += lq
    if not outs:
        return None, None
    batch["ref_mag"] = torch.cat(mags)
    return torch.cat(outs), torch.cat(lses)


def check(k: Kernel, qo_lens, kv_lens, seed, chunk_len=512, empty_chunks=False):
    gen = torch.Generator().manual_seed(seed)
    batch = make_batch(k, qo_lens, kv_lens, gen, nan_unowned=True)
    out, lse, call = run_kernel(k, batch, chunk_len, empty_chunks)
    call()
    torch.cuda.synchronize()
    ref_o, ref_l = reference(k, batch)
    if ref_o is None:
        return dict(rel_err=0.0, lse_err=0.0, nan=False)
    o = out.double()
    rel = ((o - ref_o).norm() / ref_o.norm().clamp_min(1e-30)).item()
    # Elementwise too, so one wrong row cannot hide in a batch norm: the
    # output's rounding to bf16/f16 is below 2^-8 relative.
    tol = 2.0 ** -7 if k.dtype != torch.float32 else 1e-5
    worst = ((o - ref_o).abs() - (tol + tol * batch["ref_mag"])).max().item()
    finite = torch.isfinite(ref_l)
    lse_err = (lse.double()[finite] - ref_l[finite]).abs().max().item() if finite.any() else 0.0
    lse_inf_ok = bool((lse.double()[~finite] == -math.inf).all())
    nan = bool(torch.isnan(out).any() or torch.isnan(lse).any())
    return dict(rel_err=rel, lse_err=lse_err, lse_inf_ok=lse_inf_ok, nan=nan,
                elementwise_ok=worst <= 0)


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------

def time_ms(fn, reps=50, warmup=10, inner=5):
    """Median GPU time of one fn() call. Each sample times `inner` calls
    issued back to back behind a ~1 ms GPU sleep: the host's cost of issuing
    them (ctypes here, PyTorch's dispatch for the peers) then overlaps GPU
    work instead of showing up as idle time between the events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / inner)
    return statistics.median(times)


def kernel_times(fn, reps=20):
    """Average device time (us) per call of `fn` of each kernel it launches
    (torch.profiler): where a composition's time goes."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    return {e.key[:60]: round(e.device_time_total / reps, 2) for e in prof.key_averages()
            if e.device_type == torch.autograd.DeviceType.CUDA}


def write_rows(out_dir, name, rows):
    """A benchmark's rows with the device name, as out_dir/name."""
    with open(os.path.join(out_dir, name), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


def sdpa_ms(backend, q, k, v, is_causal=False, **timing):
    """time_ms of PyTorch SDPA (GQA) restricted to one backend, after one
    warm-up call; raises when the backend refuses the inputs."""
    from torch.nn.attention import sdpa_kernel
    with sdpa_kernel(backend):
        fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=is_causal,
                                                    enable_gqa=True)
        fn()
        return time_ms(fn, **timing)


def bench_case(kernels, name, batch_size, kv_len, hq, variant_kernels, page_kernel, gen,
               chunk_len=None, peers=True):
    """FlashIR (paged) vs SDPA (contiguous) for one decode shape; chunk_len:
    split-KV kernels with chunks of that many keys."""
    k = kernels[variant_kernels["plain"]]
    row = {"case": name, "B": batch_size, "L": kv_len, "Hq": k.hq, "Hkv": k.hkv, "D": k.d}
    kv_bytes = batch_size * kv_len * k.hkv * k.d * 2 * 2
    row["kv_bytes"] = kv_bytes
    # All FlashIR configurations are timed round-robin (5 rounds, median of
    # the round medians): drift over a run (clocks, other tenants) then
    # moves every variant alike instead of skewing their ratios.
    calls = {}
    for vname, kname in variant_kernels.items():
        kk = kernels[kname]
        batch = make_batch(kk, [1] * batch_size, [kv_len] * batch_size, gen, shared_pages=False)
        calls[vname] = (batch, run_kernel(kk, batch, chunk_len)[2])
    if page_kernel:
        kk = kernels[page_kernel]
        batch = make_batch(kk, [1] * batch_size, [kv_len] * batch_size, gen, shared_pages=False)
        calls["page1"] = (batch, run_kernel(kk, batch, chunk_len)[2])
    rounds = {vname: [] for vname in calls}
    for _ in range(5):
        for vname, (_, call) in calls.items():
            rounds[vname].append(time_ms(call, reps=20, warmup=3))
    for vname, times in rounds.items():
        ms = statistics.median(times)
        row[f"flashir_{vname}_ms"] = ms
        row[f"flashir_{vname}_TBps"] = kv_bytes / ms / 1e9
    del calls
    if chunk_len:
        row["chunk_len"] = chunk_len
    if not peers:
        return row
    # Peers on contiguous KV: q [B, Hq, 1, D], k/v [B, Hkv, L, D].
    q = torch.randn(batch_size, k.hq, 1, k.d, device="cuda", dtype=torch.bfloat16)
    kc = torch.randn(batch_size, k.hkv, kv_len, k.d, device="cuda", dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    from torch.nn.attention import SDPBackend
    for label, backend in (("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION),
                           ("sdpa_fa2", SDPBackend.FLASH_ATTENTION)):
        try:
            ms = sdpa_ms(backend, q, kc, vc)
            row[f"{label}_ms"] = ms
            row[f"{label}_TBps"] = kv_bytes / ms / 1e9
        except Exception as e:  # a backend that refuses the shape
            row[f"{label}_error"] = str(e)[:200]
    try:
        from torch.nn.attention.flex_attention import flex_attention
        flex = torch.compile(flex_attention)
        fn = lambda: flex(q, kc, vc, enable_gqa=True)
        fn()
        ms = time_ms(fn)
        row["flex_ms"] = ms
        row["flex_TBps"] = kv_bytes / ms / 1e9
    except Exception as e:
        row["flex_error"] = str(e)[:200]
    return row


# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--small", action="store_true",
                    help="one tiny check per chip (for compute-sanitizer)")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--bench-only", action="store_true",
                    help="skip the correctness checks (benchmark a bundle already checked)")
    ap.add_argument("--probe", action="store_true",
                    help="page-order probe: shuffled vs in-order pages vs a device copy")
    ap.add_argument("--split-bundle", default=None,
                    help="bundle of split-KV kernels (flashir-bundle --schedule=...)")
    ap.add_argument("--chunk-lens", type=int, nargs="*", default=[512, 1024, 2048],
                    help="split-KV chunk lengths to time")
    ap.add_argument("--images", nargs="*", default=None,
                    help="check only these chips' images (e.g. sm_90a; default: all)")
    ap.add_argument("--sweep", nargs="*", default=[],
                    help="extra bundles (e.g. other warps/unroll) whose plain "
                         "kernels are timed on the B64 L4096 case only")
    args = ap.parse_args()
    report = {"date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(),
              "torch": torch.__version__, "checks": [], "bench": []}
    failures = 0
    h32 = {"plain": "plain_h32_p16_decode_0", "soft_cap": "softcap_h32_p16_decode_1",
           "sliding_window": "window_h32_p16_decode_2", "alibi": "alibi_h32_p16_decode_3",
           "hnd": "plain_h32_p16_hnd_decode_9"}
    cases_of = (("B64 L4096", 64, 4096, h32, "plain_h32_p1_decode_5"),
                ("B128 L2048", 128, 2048, {"plain": "plain_h32_p16_decode_0"}, None),
                ("B64 Hq64 L8192", 64, 8192, {"plain": "plain_h64_p16_decode_4"}, None))
    for bundle, split in ((args.bundle, False), (args.split_bundle, True)):
        if not bundle:
            continue
        manifest = json.load(open(os.path.join(bundle, "manifest.json")))
        # Correctness: the native sm_90a cubin, and sm_80 / sm_75 PTX
        # JIT-compiled by the driver.
        images = []
        for target in manifest["targets"]:
            if target["chip"] == "sm_90a" and "cubin" in target:
                images.append(("sm_90a cubin", target["chip"], os.path.join(bundle, target["cubin"])))
            if target["chip"] in ("sm_80", "sm_75"):
                images.append((target["chip"] + " PTX (driver JIT)", target["chip"],
                               os.path.join(bundle, target["ptx"])))
        kernels_by_image = {}
        if args.images is not None:
            images = [i for i in images if i[1] in args.images]
        for label, chip, path in images:
            module = Module(open(path, "rb").read())
            kernels = load_kernels(manifest, module, chip)
            kernels_by_image[label] = kernels
            cases = [([1], [37], 1)] if args.small else [
                ([1, 1, 1, 1], [1, 16, 17, 1000], 1),      # page boundaries
                ([1, 1, 1], [0, 5, 33], 2),                 # an empty request
                ([1] * 7, [300, 0, 16, 1, 4096, 77, 128], 3),
                ([2, 1, 3], [40, 9, 2], 4),                 # a few query rows, rows with no key
                ([1] * 256, [int(x) for x in torch.randint(1, 600, (256,), generator=torch.Generator().manual_seed(5))], 5),
            ]
            # Split-KV: chunks cutting pages (37), of one key (1), longer
            # than the request (5000), plus empty chunks.
            # (Per kernel: a bundle given as --bundle may hold split-KV
            # kernels too, e.g. split-KV prefill.)
            for name, k in kernels.items() if not args.bench_only else ():
                kchunkings = [(37, True)] if k.chunked and args.small else \
                    [(16, False), (37, True), (1, False), (5000, True)] if k.chunked \
                    else [(None, False)]
                # Prefill kernels: ragged query lengths across q tiles, fewer
                # keys than queries (rows with no key under causal masks), a
                # fresh prefill and one after a prefix, one-row requests.
                kcases = cases
                if k.q_rows and k.chunked and not args.small:
                    # Chunks cutting key tiles (37) and pages, a chunk longer
                    # than the request; both with an empty chunk (a -inf
                    # state for the merge).
                    kchunkings = [(37, True), (5000, True)]
                if k.q_rows:
                    r = k.q_rows
                    kcases = [([37], [37], 6)] if args.small else [
                        ([64, 1, 130, 17], [64, 40, 300, 17], 6),
                        ([200, 3], [1000, 3], 7),
                        ([4096, 1], [4096, 4097], 10),     # the longest prompt asked
                        ([r + 1, r + 1, r + 1, 0], [r + 1, 2 * r, 700, 5], 8),
                        # Query lengths around 64 / 128-row tiles and past
                        # 4096, keys >= queries.
                        ([63, 65, 127, 128, 1000, 4097], [63, 200, 127, 129, 1000, 4097], 11),
                        ([1] * 16, [int(x) for x in torch.randint(
                            1, 300, (16,), generator=torch.Generator().manual_seed(9))], 9)]
                for qo, kv, seed in kcases:
                    for chunk_len, empty in kchunkings:
                        if chunk_len == 1 and sum(kv) > 200:
                            continue
                        # Split-KV prefill: the 4096-row request only in the
                        # long chunk (+ the empty one), not in 111 short ones
                        # (x 4096 rows of states).
                        if k.q_rows and chunk_len and chunk_len < 1000 and max(qo) > 1000:
                            continue
                        r = check(k, qo, kv, seed, chunk_len, empty)
                        tol = 1e-2 if k.dtype != torch.float32 else 1e-4
                        ok = r["rel_err"] <= tol and not r["nan"] and r.get("lse_inf_ok", True) \
                            and r["lse_err"] <= 1e-2 and r.get("elementwise_ok", True)
                        failures += not ok
                        report["checks"].append(dict(image=label, kernel=name, batch=len(qo),
                                                     chunk_len=chunk_len, empty_chunks=empty,
                                                     ok=ok, **r))
                        print(f"{'PASS' if ok else 'FAIL'} {label:22s} {name:28s} B={len(qo):3d} "
                              f"chunk={chunk_len} rel_err={r['rel_err']:.2e} "
                              f"lse_err={r['lse_err']:.2e} nan={r['nan']}")
        if args.small or args.no_bench or "sm_90a cubin" not in kernels_by_image:
            continue
        kernels = kernels_by_image["sm_90a cubin"]
        for name, b, l, variants, page in cases_of:
            gen = torch.Generator().manual_seed(11)
            if not split:
                row = bench_case(kernels, name, b, l, None, variants, page, gen)
                report["bench"].append(row)
                print(json.dumps(row))
                continue
            for chunk_len in args.chunk_lens:
                row = bench_case(kernels, name + " split-KV", b, l, None, variants, page, gen,
                                 chunk_len=chunk_len, peers=False)
                report["bench"].append(row)
                print(json.dumps(row))
    if args.probe:
        # Where the bandwidth goes: the same kernel on shuffled pages and on
        # pages in pool order, next to a plain device copy of the KV bytes.
        for path in [args.bundle] + args.sweep:
            m = json.load(open(os.path.join(path, "manifest.json")))
            cubin = [t for t in m["targets"] if t["chip"] == "sm_90a"][0]["cubin"]
            kernels = load_kernels(m, Module(open(os.path.join(path, cubin), "rb").read()), "sm_90a")
            by_func = {name.rsplit("_decode_", 1)[0]: kk for name, kk in kernels.items()}
            for kname, b, l, shuffle in (("plain_h32_p16", 64, 4096, True),
                                         ("plain_h32_p16", 64, 4096, False),
                                         ("plain_h32_p16", 128, 2048, True),
                                         # Same bytes and CTAs, one KV head: contiguous pages.
                                         ("plain_g4_kv1_p16", 512, 4096, True)):
                    if kname not in by_func:
                        continue
                    k = by_func[kname]
                    gen = torch.Generator().manual_seed(11)
                    batch = make_batch(k, [1] * b, [l] * b, gen, shared_pages=False, shuffle=shuffle)
                    out, lse, call = run_kernel(k, batch)
                    ms = time_ms(call)
                    nbytes = b * l * k.hkv * k.d * 4
                    row = {"probe": os.path.basename(path), "kernel": kname, "B": b, "L": l,
                           "shuffled_pages": shuffle, "ms": ms, "TBps": nbytes / ms / 1e9}
                    kp, vp = batch["kp"], batch["vp"]
                    dst_k, dst_v = torch.empty_like(kp), torch.empty_like(vp)

                    def copy():
                        dst_k.copy_(kp)
                        dst_v.copy_(vp)
                    cms = time_ms(copy)
                    # Bytes read + written per second.
                    row["copy_rw_TBps"] = 2 * (kp.numel() + vp.numel()) * kp.element_size() / cms / 1e9
                    del dst_k, dst_v
                    # SDPA-cuDNN on contiguous KV of the same shape.
                    from torch.nn.attention import SDPBackend
                    q4 = torch.randn(b, k.hq, 1, k.d, device="cuda", dtype=k.dtype)
                    kc = torch.randn(b, k.hkv, l, k.d, device="cuda", dtype=k.dtype)
                    vc = torch.randn_like(kc)
                    sms = sdpa_ms(SDPBackend.CUDNN_ATTENTION, q4, kc, vc)
                    row["sdpa_cudnn_TBps"] = nbytes / sms / 1e9
                    del q4, kc, vc
                    report["bench"].append(row)
                    print(json.dumps(row))
    for path in args.sweep:
        m = json.load(open(os.path.join(path, "manifest.json")))
        cubin = [t for t in m["targets"] if t["chip"] == "sm_90a"][0]["cubin"]
        module = Module(open(os.path.join(path, cubin), "rb").read())
        kernels = load_kernels(m, module, "sm_90a")
        gen = torch.Generator().manual_seed(11)
        # By function: a sweep bundle may hold only some of the kernels.
        by_func = {name.rsplit("_decode_", 1)[0]: kk for name, kk in kernels.items()}
        for case, func, b, l in (("B64 L4096", "plain_h32_p16", 64, 4096),
                                 ("B128 L2048", "plain_h32_p16", 128, 2048),
                                 ("B64 Hq64 L8192", "plain_h64_p16", 64, 8192)):
            k = by_func[func]
            batch = make_batch(k, [1] * b, [l] * b, gen, shared_pages=False)
            ok = check(k, [1] * 5, [l] * 5, 3)
            out, lse, call = run_kernel(k, batch)
            ms = time_ms(call)
            row = {"sweep": os.path.basename(path), "case": case + " plain",
                   "ms": ms, "TBps": b * l * k.hkv * k.d * 4 / ms / 1e9,
                   "rel_err": ok["rel_err"]}
            report["bench"].append(row)
            print(json.dumps(row))
    with open(os.path.join(args.out, "gpu_check.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(f"{len(report['checks']) - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

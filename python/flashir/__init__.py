"""FlashIR from PyTorch: planned split-KV paged decode and attention-state merges.

The kernels come from a kernel bundle (``flashir-bundle``, split-KV kernels
via ``--schedule='attn-import-variants,attn-split-kv{chunk-size=0}'``); the
plan/run runtime is the C API (``include/flashir-c/Runtime.h``,
``libflashir_c.so``) loaded with ctypes. Set ``FLASHIR_LIB`` to the library's
path if it is not in ``build/lib/CAPI`` or ``build-runtime/lib/CAPI``.

    wrapper = flashir.BatchDecodeWithPagedKVCacheWrapper(
        "build-gpu/bundle-split", "plain_h32_p16", max_requests=128)
    wrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_last_page_len, num_pages)
    out, lse = wrapper.run(q, (k_pool, v_pool), kv_indices_on_gpu)

``BatchPrefillWithPagedKVCacheWrapper`` takes several query rows per request
(``max_qo_len``) with the same calls.
"""

import ctypes
import math
import os

__all__ = ["BatchDecodeWithPagedKVCacheWrapper", "BatchPrefillWithPagedKVCacheWrapper",
           "BatchSharedPrefixDecodeWrapper", "FlashIRError", "merge_state", "merge_states"]


class FlashIRError(RuntimeError):
    """A failure reported by the runtime (CUDA driver, bundle, capacity)."""


_STATUS = {1: ValueError, 2: IndexError, 3: FlashIRError}
_lib = None


def _library():
    global _lib
    if _lib is not None:
        return _lib
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    candidates = [os.environ.get("FLASHIR_LIB", "")] + [
        os.path.join(root, d, "lib", "CAPI", "libflashir_c.so")
        for d in ("build", "build-runtime")]
    for path in candidates:
        if path and os.path.exists(path):
            lib = ctypes.CDLL(path)
            break
    else:
        raise FlashIRError("libflashir_c.so not found (build the runtime, or set "
                           "FLASHIR_LIB); looked in " + ", ".join(c for c in candidates if c))
    i64, vp, i32p = ctypes.c_int64, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32)
    lib.flashirLastError.restype = ctypes.c_char_p
    lib.flashirSplitKVCreate.argtypes = [ctypes.c_char_p] * 4 + [i64] * 4 + [ctypes.POINTER(vp)]
    lib.flashirSplitKVShape.argtypes = [vp] + [ctypes.POINTER(i64)] * 4
    lib.flashirSplitKVPlan.argtypes = [vp, i32p, i32p, i32p, i32p, i64, i64, vp,
                                      ctypes.POINTER(i64)]
    lib.flashirSplitKVRun.argtypes = [vp, vp, vp, vp, i64, vp, i64, vp, vp, vp, ctypes.c_int]
    lib.flashirSplitKVDestroy.argtypes = [vp]
    lib.flashirSplitKVDestroy.restype = None
    lib.flashirCascadeCreate.argtypes = [ctypes.c_char_p] * 6 + [i64] * 2 + [ctypes.POINTER(vp)]
    lib.flashirCascadeShape.argtypes = [vp] + [ctypes.POINTER(i64)] * 5
    lib.flashirCascadePlannedChunks.argtypes = [vp, ctypes.POINTER(i64)]
    lib.flashirCascadePlan.argtypes = [vp, i32p, i64, i64, i32p, i32p, i32p, i64, i64, vp]
    lib.flashirCascadeRun.argtypes = [vp, vp, vp, vp, i64, vp, i64, vp, i64, vp, vp, vp,
                                      ctypes.c_int]
    lib.flashirCascadeDestroy.argtypes = [vp]
    lib.flashirCascadeDestroy.restype = None
    _lib = lib
    return lib


def _check(rc):
    if rc != 0:
        message = _library().flashirLastError().decode()
        raise _STATUS.get(rc, FlashIRError)(message)


def _torch():
    import torch
    return torch


# The manifest's kernel ABI this package reads (include/flashir/ABI).
_ABI_VERSION = 5


def _manifest(bundle_dir):
    import json
    manifest = json.load(open(os.path.join(bundle_dir, "manifest.json")))
    if manifest.get("abi_version") != _ABI_VERSION:
        raise ValueError(f"bundle {bundle_dir} has kernel ABI version "
                         f"{manifest.get('abi_version')}, this package reads "
                         f"{_ABI_VERSION}: rebuild it with this FlashIR's flashir-bundle")
    return manifest


def _arg(entry, role):
    """The argument of a kernel's manifest entry with a fixed `role`."""
    return [a for a in entry["args"] if a["role"] == role][0]


def _kernel_named(manifest, func, kind):
    """The split `<func>_<kind>_<n>` kernel's entry of a bundle's `manifest`
    (kind: "decode" or "prefill"), or None."""
    import re
    pattern = re.escape(func) + "_" + kind + r"_\d+"
    found = [k for k in manifest["kernels"]
             if re.fullmatch(pattern, k["name"]) and k["kind"] == kind
             and "merge_kernel" in k]
    return found[0] if found else None


def _int32_host(name, t):
    torch = _torch()
    if not isinstance(t, torch.Tensor) or t.dim() != 1:
        raise TypeError(f"{name} must be a 1-D tensor")
    if t.dtype != torch.int32:
        raise TypeError(f"{name} must be int32, got {t.dtype}")
    return t.detach().to("cpu").contiguous()


def _page_ids_for(kv_indptr, kv_indices):
    """Host kv_indices checked to hold the kv_indptr's pages; an empty one
    becomes one zero (the C API takes a non-null array)."""
    if kv_indices.numel() < int(kv_indptr.max()):
        raise ValueError(f"kv_indices has {kv_indices.numel()} entries; kv_indptr "
                         f"reaches {int(kv_indptr.max())}")
    if kv_indices.numel() == 0:
        return _torch().zeros(1, dtype=_torch().int32)
    return kv_indices


def _check_step_tensors(w, q, rows, k_pool, v_pool):
    """q [rows, Hq, D] and the pools [num_pages, page_size, Hkv, D] of
    wrapper `w`: CUDA, w.dtype, contiguous, the kernels' shapes."""
    torch = _torch()
    for name, t in (("q", q), ("k_pool", k_pool), ("v_pool", v_pool)):
        if not isinstance(t, torch.Tensor) or not t.is_cuda:
            raise ValueError(f"{name} must be a CUDA tensor")
        if t.dtype != w.dtype:
            raise TypeError(f"{name} must be {w.dtype}, got {t.dtype}")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous")
    if tuple(q.shape) != (rows, w.num_qo_heads, w.head_dim):
        raise ValueError(f"q must be [{rows}, {w.num_qo_heads}, {w.head_dim}] "
                         f"for the planned step, got {list(q.shape)}")
    # The kernels' pool layout (the manifest's kv_layout).
    layout = getattr(w, "kv_layout", "nhd")
    inner = (w.page_size, w.num_kv_heads, w.head_dim)
    if layout == "hnd":
        inner = (w.num_kv_heads, w.page_size, w.head_dim)
    for name, t in (("k_pool", k_pool), ("v_pool", v_pool)):
        if t.dim() != 4 or tuple(t.shape[1:]) != inner:
            raise ValueError(f"{name} must be [num_pages, {', '.join(map(str, inner))}] "
                             f"({layout.upper()}), got {list(t.shape)}")
    if v_pool.shape[0] != k_pool.shape[0]:
        raise ValueError("k_pool and v_pool hold different numbers of pages")


class BatchDecodeWithPagedKVCacheWrapper:
    """plan()/run() for one split-KV decode kernel pair of a bundle.

    ``kernel``: the function name the kernels were generated from (the
    bundle holds ``<kernel>_decode_<n>`` and ``<kernel>_merge_<n>``). The
    workspace is sized once for ``max_requests`` requests. ``num_ctas``:
    CTAs the GPU runs at once (default: the decode kernel's occupancy x SMs,
    from the driver); the planner's C is that per KV head."""

    # Query rows per request the workspace holds (1: decode).
    _max_qo_len = 1
    # Partial-state kernels this wrapper takes, in order of preference.
    _kinds = ("decode",)

    def __init__(self, bundle_dir, kernel, max_requests=256, num_ctas=None,
                 chip="sm_90a", max_chunks=None):
        torch = _torch()
        manifest = _manifest(bundle_dir)
        entry = None
        for kind in self._kinds:
            entry = entry or _kernel_named(manifest, kernel, kind)
        if entry is None:
            raise ValueError(f"bundle {bundle_dir} has no split-KV kernels for {kernel!r} "
                             f"(kernels: {', '.join(k['name'] for k in manifest['kernels'])})")
        num_kv_heads = _arg(entry, "k_pool")["shape"][2]
        # The planner's C counts CTAs per KV head: each chunk runs on every
        # KV head. None: the runtime asks the driver (occupancy x SMs).
        per_head = max(1, num_ctas // num_kv_heads) if num_ctas else 0
        handle = ctypes.c_void_p()
        lib = _library()
        _check(lib.flashirSplitKVCreate(
            bundle_dir.encode(), chip.encode(), entry["name"].encode(),
            entry["merge_kernel"].encode(),
            max_requests, max_chunks or 0, self._max_qo_len, per_head,
            ctypes.byref(handle)))
        shape = [ctypes.c_int64() for _ in range(4)]
        _check(lib.flashirSplitKVShape(handle, *[ctypes.byref(s) for s in shape]))
        self.num_qo_heads, self.num_kv_heads, self.head_dim, self.page_size = \
            [s.value for s in shape]
        self._handle = handle
        self.max_requests = max_requests
        self.dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[_arg(entry, "q")["element"]]
        self.kv_layout = entry.get("kv_layout", "nhd")
        self._planned = None

    def __del__(self):
        if getattr(self, "_handle", None):
            _library().flashirSplitKVDestroy(self._handle)
            self._handle = None

    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_last_page_len, num_pages):
        """Validates the page table (host or device int32 tensors; copied to
        the host) and plans the step. Errors raise ValueError/FlashIRError."""
        torch = _torch()
        qo, kvp, idx, last = [_int32_host(name, t) for name, t in (
            ("qo_indptr", qo_indptr), ("kv_indptr", kv_indptr), ("kv_indices", kv_indices),
            ("kv_last_page_len", kv_last_page_len))]
        batch = last.numel()
        if qo.numel() != batch + 1 or kvp.numel() != batch + 1:
            raise ValueError(f"qo_indptr and kv_indptr need {batch + 1} entries "
                             f"(kv_last_page_len has {batch}), got {qo.numel()} and {kvp.numel()}")
        idx = _page_ids_for(kvp, idx)
        p = lambda t: ctypes.cast(t.data_ptr(), ctypes.POINTER(ctypes.c_int32))
        chunks = ctypes.c_int64()
        stream = torch.cuda.current_stream().cuda_stream
        _check(_library().flashirSplitKVPlan(self._handle, p(qo), p(kvp), p(idx), p(last),
                                            batch, num_pages, ctypes.c_void_p(stream),
                                            ctypes.byref(chunks)))
        self._planned = dict(rows=int(qo[-1]), batch=batch, chunks=chunks.value)
        return self._planned

    def run(self, q, paged_kv_cache, kv_indices, capacity_grids=False):
        """Attention of the planned step: q [rows, Hq, D]; paged_kv_cache =
        (k_pool, v_pool), each [num_pages, page_size, Hkv, D]; kv_indices on
        the device (int32). capacity_grids: grids sized for the capacity
        (launches identical for every step, as a CUDA graph captured once
        needs). Returns (out [rows, Hq, D], lse [rows, Hq])."""
        torch = _torch()
        if self._planned is None:
            raise RuntimeError("run() before plan()")
        k_pool, v_pool = paged_kv_cache
        rows = self._planned["rows"]
        _check_step_tensors(self, q, rows, k_pool, v_pool)
        if not kv_indices.is_cuda or kv_indices.dtype != torch.int32:
            raise ValueError("kv_indices must be an int32 CUDA tensor")
        # Capacity-sized outputs (the kernels address rows up to the
        # capacity's; unused ones are not written).
        cap = self.max_requests * self._max_qo_len
        out = torch.empty((max(cap, rows), self.num_qo_heads, self.head_dim),
                          dtype=self.dtype, device=q.device)
        lse = torch.empty((max(cap, rows), self.num_qo_heads), dtype=torch.float32,
                          device=q.device)
        stream = torch.cuda.current_stream().cuda_stream
        indices = kv_indices if kv_indices.numel() else torch.zeros(1, dtype=torch.int32,
                                                                    device=q.device)
        _check(_library().flashirSplitKVRun(
            self._handle, ctypes.c_void_p(q.data_ptr()), ctypes.c_void_p(k_pool.data_ptr()),
            ctypes.c_void_p(v_pool.data_ptr()), k_pool.shape[0],
            ctypes.c_void_p(indices.data_ptr()), indices.numel(),
            ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(lse.data_ptr()),
            ctypes.c_void_p(stream), int(bool(capacity_grids))))
        return out[:rows], lse[:rows]


class BatchPrefillWithPagedKVCacheWrapper(BatchDecodeWithPagedKVCacheWrapper):
    """plan()/run() for ragged queries of up to ``max_qo_len`` rows per
    request over the paged KV cache (prefill, chunked prefill, speculative
    verification), with the same split-KV kernel pair: ``qo_indptr`` may
    give a request several rows; q is [total rows, Hq, D]. The mask is the
    kernel's variant (a ``causal`` kernel aligns the last query row with the
    last key). With a split-KV prefill bundle (``flashir-bundle
    --split-prefill``: ``<kernel>_prefill_<n>``) the tensor-core prefill
    kernel runs, one CTA per (chunk, q tile, head); otherwise the split-KV
    decode kernels, which walk a request's keys once per query row (correct
    for any length, fast only for a few rows). The workspace holds
    ``max_chunks x max_qo_len`` partial rows of states: size
    ``max_requests`` and ``max_qo_len`` to the steps you plan."""

    _kinds = ("prefill", "decode")

    def __init__(self, bundle_dir, kernel, max_requests=64, max_qo_len=16, num_ctas=None,
                 chip="sm_90a", max_chunks=None):
        if not isinstance(max_qo_len, int) or max_qo_len < 1:
            raise ValueError(f"max_qo_len must be a positive int, got {max_qo_len!r}")
        self._max_qo_len = max_qo_len
        super().__init__(bundle_dir, kernel, max_requests=max_requests, num_ctas=num_ctas,
                         chip=chip, max_chunks=max_chunks)


class BatchSharedPrefixDecodeWrapper:
    """Shared-prefix (cascade) decode: B one-row requests attend to a prefix
    they all share plus their own suffix. The prefix's pages are read once,
    by the split-KV prefill kernel for all B query rows (in chunks); each
    suffix by the split-KV decode kernel; the merge kernel merges each
    request's states. ``prefill_kernel``: a function of a ``--split-prefill``
    bundle with a non-causal variant (decode queries see the whole prefix),
    e.g. fused head groups; ``decode_kernel``: a function of a split-KV decode
    bundle with the same heads, head dim, page size and dtype.
    ``prefix_chunks``: every step's prefix chunks; default a capacity of one
    wave of the prefill kernel, each step planning ceil(prefix tokens / 256)
    of them (at least 2; ``planned_prefix_chunks``)."""

    def __init__(self, prefill_bundle, prefill_kernel, decode_bundle, decode_kernel,
                 max_requests=64, prefix_chunks=None, chip="sm_90a"):
        torch = _torch()
        pre = _kernel_named(_manifest(prefill_bundle), prefill_kernel, "prefill")
        dec = _kernel_named(_manifest(decode_bundle), decode_kernel, "decode")
        if pre is None:
            raise ValueError(f"bundle {prefill_bundle} has no split-KV prefill kernel for "
                             f"{prefill_kernel!r} (flashir-bundle --split-prefill)")
        if dec is None:
            raise ValueError(f"bundle {decode_bundle} has no split-KV decode kernel for "
                             f"{decode_kernel!r}")
        merge = dec["merge_kernel"]
        handle = ctypes.c_void_p()
        _check(_library().flashirCascadeCreate(
            prefill_bundle.encode(), pre["name"].encode(), decode_bundle.encode(),
            dec["name"].encode(), merge.encode(), chip.encode(), max_requests,
            prefix_chunks or 0, ctypes.byref(handle)))
        self._handle = handle
        shape = [ctypes.c_int64() for _ in range(5)]
        _check(_library().flashirCascadeShape(handle, *[ctypes.byref(s) for s in shape]))
        (self.num_qo_heads, self.num_kv_heads, self.head_dim, self.page_size,
         self.prefix_chunks) = [s.value for s in shape]
        self.max_requests = max_requests
        self.dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[_arg(dec, "q")["element"]]
        if pre.get("kv_layout", "nhd") != dec.get("kv_layout", "nhd"):
            raise ValueError("the prefix and suffix kernels read different KV layouts")
        self.kv_layout = dec.get("kv_layout", "nhd")
        self._planned = None

    def __del__(self):
        if getattr(self, "_handle", None):
            _library().flashirCascadeDestroy(self._handle)
            self._handle = None

    def plan(self, prefix_indices, prefix_len, kv_indptr, kv_indices, kv_last_page_len,
             num_pages):
        """prefix_indices: the prefix's page ids (prefix_len tokens);
        kv_indptr / kv_indices / kv_last_page_len: each request's own suffix
        pages (int32 tensors, copied to the host)."""
        torch = _torch()
        pre = _int32_host("prefix_indices", prefix_indices)
        kvp = _int32_host("kv_indptr", kv_indptr)
        idx = _int32_host("kv_indices", kv_indices)
        last = _int32_host("kv_last_page_len", kv_last_page_len)
        batch = last.numel()
        if kvp.numel() != batch + 1:
            raise ValueError(f"kv_indptr needs {batch + 1} entries (kv_last_page_len has "
                             f"{batch}), got {kvp.numel()}")
        idx = _page_ids_for(kvp, idx)
        p = lambda t: ctypes.cast(t.data_ptr(), ctypes.POINTER(ctypes.c_int32))
        stream = torch.cuda.current_stream().cuda_stream
        _check(_library().flashirCascadePlan(self._handle, p(pre), pre.numel(), int(prefix_len),
                                             p(kvp), p(idx), p(last), batch, num_pages,
                                             ctypes.c_void_p(stream)))
        chunks = ctypes.c_int64()
        _check(_library().flashirCascadePlannedChunks(self._handle, ctypes.byref(chunks)))
        self._planned = dict(batch=batch, prefix_chunks=chunks.value)
        return self._planned

    @property
    def planned_prefix_chunks(self):
        """The last plan's prefix chunks (short prefixes take fewer than
        ``prefix_chunks``, the capacity's)."""
        return self._planned["prefix_chunks"] if self._planned else 0

    def run(self, q, paged_kv_cache, prefix_indices, kv_indices, capacity_grids=False):
        """q [B, Hq, D]; paged_kv_cache = (k_pool, v_pool), each [num_pages,
        page_size, Hkv, D]; prefix_indices, kv_indices: int32 CUDA tensors.
        capacity_grids: grids sized for max_requests (what a CUDA graph
        captured once needs). Returns (out [B, Hq, D], lse [B, Hq])."""
        torch = _torch()
        if self._planned is None:
            raise RuntimeError("run() before plan()")
        k_pool, v_pool = paged_kv_cache
        b = self._planned["batch"]
        _check_step_tensors(self, q, b, k_pool, v_pool)
        for name, t in (("prefix_indices", prefix_indices), ("kv_indices", kv_indices)):
            if not isinstance(t, torch.Tensor) or not t.is_cuda or t.dtype != torch.int32:
                raise ValueError(f"{name} must be an int32 CUDA tensor")
        cap = self.max_requests
        out = torch.empty((cap, self.num_qo_heads, self.head_dim), dtype=self.dtype,
                          device=q.device)
        lse = torch.empty((cap, self.num_qo_heads), dtype=torch.float32, device=q.device)
        indices = kv_indices if kv_indices.numel() else torch.zeros(1, dtype=torch.int32,
                                                                    device=q.device)
        stream = torch.cuda.current_stream().cuda_stream
        v = lambda t: ctypes.c_void_p(t.data_ptr())
        _check(_library().flashirCascadeRun(
            self._handle, v(q), v(k_pool), v(v_pool), k_pool.shape[0], v(prefix_indices),
            prefix_indices.numel(), v(indices), indices.numel(), v(out), v(lse),
            ctypes.c_void_p(stream), int(bool(capacity_grids))))
        return out[:b], lse[:b]


def merge_state(v_a, s_a, v_b, s_b):
    """Merges two attention states (eq. 6): v [..., H, D] normalised outputs,
    s [..., H] their log-sum-exp. Empty states (s = -inf) are identities.
    Computed in float32 with PyTorch ops; returns (v, s) in v_a's dtype."""
    torch = _torch()
    if v_a.shape != v_b.shape or s_a.shape != s_b.shape or v_a.shape[:-1] != s_a.shape:
        raise ValueError(f"merge_state needs v [..., H, D] and s [..., H] of equal shapes, "
                         f"got {list(v_a.shape)}, {list(s_a.shape)}, {list(v_b.shape)}, "
                         f"{list(s_b.shape)}")
    sa, sb = s_a.float(), s_b.float()
    m = torch.maximum(sa, sb)
    m_safe = torch.where(torch.isinf(m) & (m < 0), torch.zeros_like(m), m)
    wa, wb = torch.exp(sa - m_safe), torch.exp(sb - m_safe)
    total = wa + wb
    denom = torch.where(total > 0, total, torch.ones_like(total))
    v = (v_a.float() * wa[..., None] + v_b.float() * wb[..., None]) / denom[..., None]
    s = torch.where(total > 0, m_safe + torch.log(denom), torch.full_like(m, -math.inf))
    return v.to(v_a.dtype), s


def merge_states(v, s):
    """Merges states along dim 0: v [n, ..., H, D], s [n, ..., H]."""
    if v.shape[0] == 0:
        raise ValueError("merge_states needs at least one state")
    out_v, out_s = v[0], s[0]
    for i in range(1, v.shape[0]):
        out_v, out_s = merge_state(out_v, out_s, v[i], s[i])
    return out_v, out_s

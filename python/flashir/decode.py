"""Planned split-KV decode over a paged KV cache (plan/run, CUDA-graph
safe)."""

import ctypes

from ._args import _int32_host, _page_ids_for, _param_array, _planned_step
from ._bundle import _arg, _kernel_named, _manifest
from ._lib import _check, _library, _torch

__all__ = ["BatchDecodeWithPagedKVCacheWrapper"]


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
        self.variant = entry.get("variant")
        self._param_specs = [a for a in entry["args"] if a["role"] == "param"]
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

    def run(self, q, paged_kv_cache, kv_indices, capacity_grids=False, params=None):
        """Attention of the planned step: q [rows, Hq, D]; paged_kv_cache =
        (k_pool, v_pool), each [num_pages, page_size, Hkv, D]; kv_indices on
        the device (int32). capacity_grids: grids sized for the capacity
        (launches identical for every step, as a CUDA graph captured once
        needs). params: the variant's parameters in declaration order (a
        number per scalar, a CUDA tensor per per-request, per-head or buffer
        parameter). Returns (out [rows, Hq, D], lse [rows, Hq])."""
        torch = _torch()
        k_pool, v_pool, rows = _planned_step(self, q, paged_kv_cache, "rows")
        if not kv_indices.is_cuda or kv_indices.dtype != torch.int32:
            raise ValueError("kv_indices must be an int32 CUDA tensor")
        param_array = _param_array(self._param_specs, params)
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
        _check(_library().flashirSplitKVRunWithParams(
            self._handle, ctypes.c_void_p(q.data_ptr()), ctypes.c_void_p(k_pool.data_ptr()),
            ctypes.c_void_p(v_pool.data_ptr()), k_pool.shape[0],
            ctypes.c_void_p(indices.data_ptr()), indices.numel(),
            ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(lse.data_ptr()),
            param_array, len(self._param_specs), ctypes.c_void_p(stream),
            int(bool(capacity_grids))))
        return out[:rows], lse[:rows]

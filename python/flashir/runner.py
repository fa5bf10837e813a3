"""Bundle-level runners: plan()/run() over the kernels of a bundle built
ahead of time (``flashir-bundle``), by function name. The FlashInfer-named
wrappers (``decode``, ``prefill``, ``cascade``) compile their bundles on
first use and run through these."""

import ctypes

from ._args import _STEP_NAMES, _int32_host, _page_ids_for, _param_array, _planned_step
from ._bundle import _arg, _kernel_named, _manifest
from ._lib import _check, _library, _on_current_device, _torch

__all__ = ["SplitKVRunner", "SharedPrefixRunner"]


class SplitKVRunner:
    """plan()/run() for one split-KV kernel pair of a bundle: the split
    kernel (``<kernel>_prefill_<n>``, the tensor-core prefill kernel of a
    ``flashir-bundle --split-prefill`` bundle, one CTA per (chunk, q tile,
    head); else ``<kernel>_decode_<n>``, which walks a request's keys once
    per query row: correct for any length, fast for a few rows) and its
    merge kernel.

    ``kernel``: the function name the kernels were generated from;
    ``chip``: the bundle image to load (``jit.detect_chip()``'s second
    value for the current device). The workspace is sized once for
    ``max_requests`` requests of up to ``max_qo_len`` query rows
    (``max_chunks x max_qo_len`` partial rows of states). ``num_ctas``: CTAs
    the GPU runs at once (default: the split kernel's occupancy x SMs, from
    the driver); the planner's C is that per KV head. The mask is the
    kernel's variant (a ``causal`` kernel aligns the last query row with
    the last key)."""

    def __init__(self, bundle_dir, kernel, max_requests=256, max_qo_len=1, num_ctas=None,
                 chip="sm_90a", max_chunks=None):
        torch = _torch()
        if isinstance(max_qo_len, bool) or not isinstance(max_qo_len, int) or max_qo_len < 1:
            raise ValueError(f"max_qo_len must be a positive int, got {max_qo_len!r}")
        self._max_qo_len = max_qo_len
        manifest = _manifest(bundle_dir)
        entry = None
        for kind in ("prefill", "decode"):
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
        _on_current_device()
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

    def run(self, q, paged_kv_cache, kv_indices, capacity_grids=False, params=None,
            names=_STEP_NAMES):
        """Attention of the planned step: q [rows, Hq, D]; paged_kv_cache =
        (k_pool, v_pool), each [num_pages, page_size, Hkv, D]; kv_indices on
        the device (int32). capacity_grids: grids sized for the capacity
        (launches identical for every step, as a CUDA graph captured once
        needs). params: the variant's parameters in declaration order (a
        number per scalar, a CUDA tensor per per-request, per-head or buffer
        parameter). ``names``: q's and the pools' names in errors.
        Returns (out [rows, Hq, D], lse [rows, Hq])."""
        torch = _torch()
        k_pool, v_pool, rows = _planned_step(self, q, paged_kv_cache, "rows", names)
        if not kv_indices.is_cuda or kv_indices.dtype != torch.int32:
            raise ValueError("kv_indices must be an int32 CUDA tensor")
        param_array = _param_array(self._param_specs, params)
        if rows == 0:  # an empty step: nothing to launch (q has no storage)
            return (torch.empty((0, self.num_qo_heads, self.head_dim), dtype=self.dtype,
                                device=q.device),
                    torch.empty((0, self.num_qo_heads), dtype=torch.float32, device=q.device))
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


class SharedPrefixRunner:
    """Shared-prefix (cascade) decode: B one-row requests attend to a prefix
    they all share plus their own suffix. The prefix's pages are read once,
    by the split-KV prefill kernel for all B query rows (in chunks); each
    suffix by the split-KV decode kernel; the merge kernel merges each
    request's states. ``prefill_kernel``: a function of a ``--split-prefill``
    bundle with a position-free variant (no mask, no position hooks: decode
    queries see the whole prefix; the manifest's ``position_free``), e.g.
    plain or a soft-cap without a mask; ``decode_kernel``: a function of a
    split-KV decode bundle with the same variant, heads, head dim, page size
    and dtype. Variant parameters: scalars and per-head tensors (run()'s
    ``params``), the same for both kernels.
    ``prefix_chunks``: every step's prefix chunks; default a capacity of one
    wave of the prefill kernel, each step planning ceil(prefix tokens /
    ``min_chunk_keys``) of them (at least 2; ``planned_prefix_chunks``).
    Each suffix runs in ceil(longest suffix / ``min_suffix_chunk_keys``)
    chunks, up to ``suffix_chunks`` (``planned_suffix_chunks``)."""

    def __init__(self, prefill_bundle, prefill_kernel, decode_bundle, decode_kernel,
                 max_requests=64, prefix_chunks=None, chip="sm_90a", min_chunk_keys=256,
                 suffix_chunks=4, min_suffix_chunk_keys=64):
        torch = _torch()
        for name, value in (("min_chunk_keys", min_chunk_keys),
                            ("suffix_chunks", suffix_chunks),
                            ("min_suffix_chunk_keys", min_suffix_chunk_keys)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
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
        _on_current_device()
        _check(_library().flashirCascadeCreateWithChunks(
            prefill_bundle.encode(), pre["name"].encode(), decode_bundle.encode(),
            dec["name"].encode(), merge.encode(), chip.encode(), max_requests,
            prefix_chunks or 0, min_chunk_keys, suffix_chunks, min_suffix_chunk_keys,
            ctypes.byref(handle)))
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
        self._param_specs = [a for a in dec["args"] if a["role"] == "param"]
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
        suffix = ctypes.c_int64()
        _check(_library().flashirCascadePlannedSuffixChunks(self._handle,
                                                            ctypes.byref(suffix)))
        self._planned = dict(batch=batch, prefix_chunks=chunks.value,
                             suffix_chunks=suffix.value)
        return self._planned

    @property
    def planned_prefix_chunks(self):
        """The last plan's prefix chunks (short prefixes take fewer than
        ``prefix_chunks``, the capacity's)."""
        return self._planned["prefix_chunks"] if self._planned else 0

    @property
    def planned_suffix_chunks(self):
        """The chunks each suffix of the last plan runs in: one per
        ``min_suffix_chunk_keys`` keys of the longest suffix, up to
        ``suffix_chunks``, alike for every request (0 before a plan)."""
        return self._planned["suffix_chunks"] if self._planned else 0

    def run(self, q, paged_kv_cache, prefix_indices, kv_indices, capacity_grids=False,
            params=None):
        """q [B, Hq, D]; paged_kv_cache = (k_pool, v_pool), each [num_pages,
        page_size, Hkv, D]; prefix_indices, kv_indices: int32 CUDA tensors.
        capacity_grids: grids sized for max_requests (what a CUDA graph
        captured once needs). params: the variant's parameters, as
        SplitKVRunner.run's. Returns (out [B, Hq, D], lse [B, Hq])."""
        torch = _torch()
        k_pool, v_pool, b = _planned_step(self, q, paged_kv_cache, "batch")
        for name, t in (("prefix_indices", prefix_indices), ("kv_indices", kv_indices)):
            if not isinstance(t, torch.Tensor) or not t.is_cuda or t.dtype != torch.int32:
                raise ValueError(f"{name} must be an int32 CUDA tensor")
        param_array = _param_array(self._param_specs, params)
        cap = self.max_requests
        out = torch.empty((cap, self.num_qo_heads, self.head_dim), dtype=self.dtype,
                          device=q.device)
        lse = torch.empty((cap, self.num_qo_heads), dtype=torch.float32, device=q.device)
        indices = kv_indices if kv_indices.numel() else torch.zeros(1, dtype=torch.int32,
                                                                    device=q.device)
        stream = torch.cuda.current_stream().cuda_stream
        v = lambda t: ctypes.c_void_p(t.data_ptr())
        _check(_library().flashirCascadeRunWithParams(
            self._handle, v(q), v(k_pool), v(v_pool), k_pool.shape[0], v(prefix_indices),
            prefix_indices.numel(), v(indices), indices.numel(), v(out), v(lse),
            param_array, len(self._param_specs), ctypes.c_void_p(stream),
            int(bool(capacity_grids))))
        return out[:b], lse[:b]

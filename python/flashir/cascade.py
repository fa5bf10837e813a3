"""Shared-prefix (cascade) decode: the prefix read once for every request."""

import ctypes

from ._args import _int32_host, _page_ids_for, _planned_step
from ._bundle import _arg, _kernel_named, _manifest
from ._lib import _check, _library, _torch

__all__ = ["BatchSharedPrefixDecodeWrapper"]


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
        k_pool, v_pool, b = _planned_step(self, q, paged_kv_cache, "batch")
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

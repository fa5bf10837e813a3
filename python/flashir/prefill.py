"""Batch prefill (ragged queries, several rows per request), FlashInfer's
``BatchPrefillWithPagedKVCacheWrapper`` and
``BatchPrefillWithRaggedKVCacheWrapper``: the tensor-core split-KV prefill
kernels, compiled on first use for the current device."""

from . import options
from ._lib import _torch
from ._wrapper import (PagedWrapperBase, _check_o_data_type, _device_int32, _indptr,
                       _variant_spec)
from .decode import _check_backend, _no_scales

__all__ = ["BatchPrefillWithPagedKVCacheWrapper", "BatchPrefillWithRaggedKVCacheWrapper"]


def _prefill_options(wrapper, num_qo_heads, num_kv_heads, head_dim_qk, page_size, head_dim_vo,
                     custom_mask, packed_custom_mask, causal, pos_encoding_mode, window_left,
                     logits_soft_cap, sm_scale, rope_scale, rope_theta, q_data_type,
                     kv_data_type, kv_layout, variant=None, variant_params=None,
                     o_data_type=None):
    """(spec, recipes, mask, packed) of a prefill plan()'s options."""
    _check_o_data_type(o_data_type, q_data_type)
    if head_dim_vo is not None and head_dim_vo != head_dim_qk:
        raise ValueError(f"head_dim_vo ({head_dim_vo}) must equal head_dim_qk "
                         f"({head_dim_qk}) in FlashIR's kernels")
    if variant is not None:
        spec, recipes = _variant_spec(
            variant, variant_params, (num_qo_heads, num_kv_heads, head_dim_qk, page_size),
            kv_layout, sm_scale, q_data_type, kv_data_type, causal=(causal, False),
            custom_mask=(custom_mask is None, True),
            packed_custom_mask=(packed_custom_mask is None, True),
            pos_encoding_mode=(pos_encoding_mode, "NONE"), window_left=(window_left, -1),
            logits_soft_cap=(logits_soft_cap, None), rope_scale=(rope_scale, None),
            rope_theta=(rope_theta, None))
        return spec, recipes, None, False
    if custom_mask is not None and packed_custom_mask is not None:
        raise ValueError("pass custom_mask or packed_custom_mask, not both")
    mask = packed_custom_mask if packed_custom_mask is not None else custom_mask
    spec, recipes = options.attention_options(
        num_qo_heads, num_kv_heads, head_dim_qk, page_size, kv_layout, causal=causal,
        window_left=window_left, logits_soft_cap=logits_soft_cap, sm_scale=sm_scale,
        pos_encoding_mode=pos_encoding_mode, q_data_type=q_data_type,
        kv_data_type=kv_data_type, rope_scale=rope_scale, rope_theta=rope_theta,
        custom_mask=mask is not None)
    return spec, recipes, mask, packed_custom_mask is not None


class BatchPrefillWithPagedKVCacheWrapper(PagedWrapperBase):
    """Ragged queries (``qo_indptr``) over a paged KV cache: prefill,
    chunked prefill, speculative verification. A request's query rows are
    its last keys' positions (bottom-right causal alignment, as
    FlashInfer's). Constructor arguments as FlashInfer's (see
    ``BatchDecodeWithPagedKVCacheWrapper``); under ``use_cuda_graph`` the
    capacity is ``max_batch_size`` requests (default: ``paged_kv_indptr_buf``'s
    size, else the first plan()'s) of up to ``max_qo_len`` rows (default:
    the first plan()'s longest)."""

    _prefill = True

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD", use_cuda_graph=False,
                 qo_indptr_buf=None, paged_kv_indptr_buf=None, paged_kv_indices_buf=None,
                 paged_kv_last_page_len_buf=None, custom_mask_buf=None, mask_indptr_buf=None,
                 backend="auto", max_batch_size=None, max_qo_len=None):
        _check_backend(backend)
        for name, buf in (("qo_indptr_buf", qo_indptr_buf),
                          ("paged_kv_last_page_len_buf", paged_kv_last_page_len_buf),
                          ("mask_indptr_buf", mask_indptr_buf)):
            _device_int32(name, buf)
        indptr = _device_int32("paged_kv_indptr_buf", paged_kv_indptr_buf)
        if indptr is not None and max_batch_size is None:
            max_batch_size = max(1, indptr.numel() - 1)
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph,
                         paged_kv_indices_buf, max_batch_size, max_qo_len)

    def plan(self, qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len,
             num_qo_heads, num_kv_heads, head_dim_qk, page_size, head_dim_vo=None,
             custom_mask=None, packed_custom_mask=None, causal=False, pos_encoding_mode="NONE",
             use_fp16_qk_reduction=False, sm_scale=None, window_left=-1, logits_soft_cap=None,
             rope_scale=None, rope_theta=None, q_data_type="float16", kv_data_type=None,
             o_data_type=None, non_blocking=True, variant=None, variant_params=None):
        """Plans a step (int32 page table, host or device). ``variant`` /
        ``variant_params``: as ``BatchDecodeWithPagedKVCacheWrapper.plan``'s
        (a variant's mask is its own: causal stays False). ``custom_mask``:
        the requests' [qo_len, kv_len] bool masks flattened and concatenated
        (``packed_custom_mask``: each packed little-endian, padded to a
        byte), the whole mask. ``use_fp16_qk_reduction`` is accepted and
        has no effect (FlashIR accumulates Q.K^T in f32)."""
        spec, recipes, mask, packed = _prefill_options(
            self, num_qo_heads, num_kv_heads, head_dim_qk, page_size, head_dim_vo, custom_mask,
            packed_custom_mask, causal, pos_encoding_mode, window_left, logits_soft_cap,
            sm_scale, rope_scale, rope_theta, q_data_type, kv_data_type, self._kv_layout,
            variant, variant_params, o_data_type)
        self._plan_paged(spec, recipes, qo_indptr, paged_kv_indptr, paged_kv_indices,
                         paged_kv_last_page_len, custom_mask=mask, mask_packed=packed)

    def run(self, q, paged_kv_cache, *, q_scale=None, k_scale=None, v_scale=None, out=None,
            lse=None, return_lse=False):
        """q [qo_indptr[-1], Hq, D]; paged_kv_cache = (k_cache, v_cache).
        Returns out (and lse, natural log, with ``return_lse``)."""
        _no_scales(q_scale, k_scale, v_scale)
        k, v = self._pools(paged_kv_cache)
        return self._run_paged(q, k, v, out, lse, return_lse)

    forward = run


class BatchPrefillWithRaggedKVCacheWrapper(PagedWrapperBase):
    """Ragged queries over ragged (contiguous) keys and values: request i's
    keys are rows kv_indptr[i]..kv_indptr[i + 1] of k and v [total_kv, Hkv,
    D] (NHD). FlashIR reads them as a cache of one-token pages over the
    same memory (no copy)."""

    _prefill = True
    _names = ("qo_indptr", "kv_indptr", "kv_indptr", "kv_indptr")

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD", use_cuda_graph=False,
                 qo_indptr_buf=None, kv_indptr_buf=None, custom_mask_buf=None,
                 mask_indptr_buf=None, backend="auto", max_batch_size=None, max_qo_len=None,
                 max_kv_tokens=None):
        _check_backend(backend)
        if kv_layout != "NHD":
            raise ValueError(f"kv_layout: ragged keys and values are NHD ([tokens, Hkv, D]) in "
                             f"FlashIR, got {kv_layout!r}")
        for name, buf in (("qo_indptr_buf", qo_indptr_buf), ("mask_indptr_buf", mask_indptr_buf)):
            _device_int32(name, buf)
        indptr = _device_int32("kv_indptr_buf", kv_indptr_buf)
        if indptr is not None and max_batch_size is None:
            max_batch_size = max(1, indptr.numel() - 1)
        indices = None
        if max_kv_tokens is not None:
            if isinstance(max_kv_tokens, bool) or not isinstance(max_kv_tokens, int) \
                    or max_kv_tokens < 1:
                raise ValueError(f"max_kv_tokens must be a positive int, got {max_kv_tokens!r}")
            indices = _torch().arange(max_kv_tokens, dtype=_torch().int32, device="cuda")
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph, indices,
                         max_batch_size, max_qo_len)

    def plan(self, qo_indptr, kv_indptr, num_qo_heads, num_kv_heads, head_dim_qk,
             head_dim_vo=None, custom_mask=None, packed_custom_mask=None, causal=False,
             pos_encoding_mode="NONE", use_fp16_qk_reduction=False, window_left=-1,
             logits_soft_cap=None, sm_scale=None, rope_scale=None, rope_theta=None,
             q_data_type="float16", kv_data_type=None, o_data_type=None, non_blocking=True,
             variant=None, variant_params=None):
        """Plans a step: qo_indptr and kv_indptr [batch + 1] (int32); the
        rest as ``BatchPrefillWithPagedKVCacheWrapper.plan``."""
        torch = _torch()
        spec, recipes, mask, packed = _prefill_options(
            self, num_qo_heads, num_kv_heads, head_dim_qk, 1, head_dim_vo, custom_mask,
            packed_custom_mask, causal, pos_encoding_mode, window_left, logits_soft_cap,
            sm_scale, rope_scale, rope_theta, q_data_type, kv_data_type, "NHD", variant,
            variant_params, o_data_type)
        kvp = _indptr("kv_indptr", kv_indptr)
        lens = kvp[1:] - kvp[:-1]
        last = (lens > 0).to(torch.int32)
        tokens = torch.arange(int(kvp[-1]), dtype=torch.int32)
        self._plan_paged(spec, recipes, qo_indptr, kvp, tokens, last, custom_mask=mask,
                         mask_packed=packed)
        self._planned["kv_tokens"] = int(kvp[-1])

    def _upload_indices(self, idx):
        # Page ids are token ids 0..n-1: one arange, grown as needed.
        torch = _torch()
        if self._indices is not None and self._indices.numel() >= max(1, idx.numel()):
            return
        if self._fixed_indices or (self._graph and self._indices is not None):
            raise ValueError(f"capacity: the step has {idx.numel()} keys; this CUDA-graph "
                             f"wrapper holds {self._indices.numel()} (max_kv_tokens)")
        n = max(256, 1 << max(0, idx.numel() - 1).bit_length())
        self._indices = torch.arange(n, dtype=torch.int32, device="cuda")

    def run(self, q, k, v, *, out=None, lse=None, return_lse=False):
        """q [qo_indptr[-1], Hq, D]; k, v [kv_indptr[-1] (or more), Hkv, D].
        Returns out (and lse, natural log, with ``return_lse``)."""
        torch = _torch()
        if self._planned is None:
            raise RuntimeError("run() before plan()")
        heads = (self._runner.num_kv_heads, self._runner.head_dim)
        for name, t in (("k", k), ("v", v)):
            if not isinstance(t, torch.Tensor) or t.dim() != 3 or tuple(t.shape[1:]) != heads:
                raise ValueError(f"{name} must be a [tokens, {heads[0]}, {heads[1]}] tensor, "
                                 f"got {list(t.shape) if isinstance(t, torch.Tensor) else t}")
            if t.shape[0] < self._planned["kv_tokens"]:
                raise IndexError(f"{name} has {t.shape[0]} rows; kv_indptr reaches "
                                 f"{self._planned['kv_tokens']}")
        return self._run_paged(q, k.unsqueeze(1), v.unsqueeze(1), out, lse, return_lse,
                               names=("q", "k", "v"))

    forward = run

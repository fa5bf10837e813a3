"""Batch decode over a paged KV cache, FlashInfer's
``BatchDecodeWithPagedKVCacheWrapper``: plan() compiles the kernels on first
use (flashir.jit) for the current device and plans the step; run() is
CUDA-graph safe."""

from . import options
from ._lib import _torch
from ._wrapper import PagedWrapperBase, _check_o_data_type, _device_int32, _variant_spec

__all__ = ["BatchDecodeWithPagedKVCacheWrapper"]


def _check_backend(backend):
    if backend not in ("auto", "flashir"):
        raise ValueError(f"backend must be 'auto' (FlashIR's kernels), got {backend!r}")


class BatchDecodeWithPagedKVCacheWrapper(PagedWrapperBase):
    """One query row per request over a paged KV cache.

    As FlashInfer's: ``float_workspace_buffer`` (a CUDA tensor; FlashIR's
    runtime sizes its own workspace, so it is only kept), ``kv_layout``
    ("NHD": pools [num_pages, page_size, Hkv, D]; "HND": [num_pages, Hkv,
    page_size, D]), ``use_cuda_graph`` (the capacity is fixed by
    ``paged_kv_indptr_buffer`` / ``max_batch_size`` or the first plan(), the
    page ids live in ``paged_kv_indices_buffer`` or a buffer sized at the
    first plan(); one graph captured once replays every step within it; the
    variant's scalar parameters are captured with it). ``use_tensor_cores``
    is accepted and left to FlashIR, which picks tensor-core or CUDA-core
    decode kernels itself."""

    _names = ("indptr", "indptr", "indices", "last_page_len")

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD", use_cuda_graph=False,
                 use_tensor_cores=False, paged_kv_indptr_buffer=None,
                 paged_kv_indices_buffer=None, paged_kv_last_page_len_buffer=None,
                 backend="auto", max_batch_size=None):
        _check_backend(backend)
        indptr = _device_int32("paged_kv_indptr_buffer", paged_kv_indptr_buffer)
        _device_int32("paged_kv_last_page_len_buffer", paged_kv_last_page_len_buffer)
        if indptr is not None and max_batch_size is None:
            max_batch_size = max(1, indptr.numel() - 1)
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph,
                         paged_kv_indices_buffer, max_batch_size, 1)

    def plan(self, indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim,
             page_size, pos_encoding_mode="NONE", window_left=-1, logits_soft_cap=None,
             q_data_type="float16", kv_data_type=None, o_data_type=None, data_type=None,
             sm_scale=None,
             rope_scale=None, rope_theta=None, non_blocking=True, variant=None,
             variant_params=None):
        """Plans a step: ``indptr`` [batch + 1], ``indices`` (page ids),
        ``last_page_len`` [batch] (int32, host or device); the attention's
        shape and variant options as FlashInfer's. ``variant``: instead of
        those options, a standard variant's name or a variant's attn IR text
        (docs/WritingVariants.md), with ``variant_params`` in its
        declaration order (numbers for scalars, tensors for per-request,
        per-head and buffer parameters). Compiles the kernels on first use
        of a configuration (``compile_info`` tells)."""
        torch = _torch()
        if data_type is not None:  # FlashInfer's older name of q_data_type
            q_data_type = data_type
        _check_o_data_type(o_data_type, q_data_type)
        shape = (num_qo_heads, num_kv_heads, head_dim, page_size)
        if variant is not None:
            spec, recipes = _variant_spec(
                variant, variant_params, shape, self._kv_layout, sm_scale, q_data_type,
                kv_data_type, pos_encoding_mode=(pos_encoding_mode, "NONE"),
                window_left=(window_left, -1), logits_soft_cap=(logits_soft_cap, None),
                rope_scale=(rope_scale, None), rope_theta=(rope_theta, None))
        else:
            spec, recipes = options.attention_options(
                *shape, self._kv_layout, window_left=window_left,
                logits_soft_cap=logits_soft_cap, sm_scale=sm_scale,
                pos_encoding_mode=pos_encoding_mode, q_data_type=q_data_type,
                kv_data_type=kv_data_type, rope_scale=rope_scale, rope_theta=rope_theta)
        if not isinstance(last_page_len, torch.Tensor):
            raise TypeError("last_page_len must be a 1-D tensor")
        batch = last_page_len.numel()
        qo = torch.arange(batch + 1, dtype=torch.int32)
        self._plan_paged(spec, recipes, qo, indptr, indices, last_page_len)

    def run(self, q, paged_kv_cache, *, q_scale=None, k_scale=None, v_scale=None, out=None,
            lse=None, return_lse=False):
        """q [batch, Hq, D]; paged_kv_cache = (k_cache, v_cache) in the
        wrapper's layout. Returns out [batch, Hq, D], and lse [batch, Hq]
        (natural log) with ``return_lse``; ``out`` / ``lse``: tensors to
        write them to."""
        _no_scales(q_scale, k_scale, v_scale)
        k, v = self._pools(paged_kv_cache)
        return self._run_paged(q, k, v, out, lse, return_lse)

    forward = run


def _no_scales(*scales):
    if any(s is not None for s in scales):
        raise ValueError("q_scale / k_scale / v_scale: FlashIR's kernels read f16 or bf16 "
                         "without scales (fold a scale into sm_scale)")

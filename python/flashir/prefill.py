"""Planned split-KV prefill: several query rows per request."""

from .decode import BatchDecodeWithPagedKVCacheWrapper

__all__ = ["BatchPrefillWithPagedKVCacheWrapper"]


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

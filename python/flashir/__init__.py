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

Modules: ``decode``, ``prefill``, ``cascade`` (the wrappers), ``merge``
(state merges), ``ir`` (attn programs of a configuration), ``options``
(FlashInfer's plan() options as a configuration and its parameters), ``jit``
(compile on first use, on-disk cache), ``_lib`` (the C library), ``_bundle``
(manifests), ``_args`` (argument checks).
"""

from ._lib import FlashIRError
from .cascade import BatchSharedPrefixDecodeWrapper
from .decode import BatchDecodeWithPagedKVCacheWrapper
from .merge import merge_state, merge_states
from .prefill import BatchPrefillWithPagedKVCacheWrapper

__all__ = ["BatchDecodeWithPagedKVCacheWrapper", "BatchPrefillWithPagedKVCacheWrapper",
           "BatchSharedPrefixDecodeWrapper", "FlashIRError", "merge_state", "merge_states"]

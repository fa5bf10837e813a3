"""FlashIR from PyTorch: FlashInfer-named attention wrappers whose kernels
are compiled on first use, and attention-state merges.

    import flashir
    workspace = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
    wrapper = flashir.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD")
    wrapper.plan(kv_indptr, kv_indices, kv_last_page_len, num_qo_heads=32,
                 num_kv_heads=8, head_dim=128, page_size=16,
                 logits_soft_cap=30.0, q_data_type=torch.bfloat16)
    out = wrapper.run(q, (k_cache, v_cache))

The first plan() of a configuration compiles its kernels for the current
device with ``flashir-bundle`` (``flashir.jit``: on-disk cache, AOT
command); the plan/run runtime is the C API (``include/flashir-c/Runtime.h``,
``libflashir_c.so``) loaded with ctypes. Set ``FLASHIR_LIB`` to the
library's path if it is not in ``build/lib/CAPI`` or
``build-runtime/lib/CAPI``, ``FLASHIR_COMPILER`` to the compiler's.

Modules: ``decode``, ``prefill``, ``cascade`` (the FlashInfer-named
wrappers), ``merge`` (state merges), ``runner`` (plan/run over a bundle
built ahead of time, by function name), ``ir`` (attn programs of a
configuration), ``options`` (FlashInfer's plan() options as a
configuration and its parameters), ``jit`` (compile on first use, on-disk
cache), ``_wrapper`` (what the wrappers share), ``_lib`` (the C library),
``_bundle`` (manifests), ``_args`` (argument checks).
"""

__version__ = "0.1.0"

from ._lib import FlashIRError
from .cascade import MultiLevelCascadeAttentionWrapper
from .decode import BatchDecodeWithPagedKVCacheWrapper
from .jit import JitError
from .merge import merge_state, merge_state_in_place, merge_states
from .prefill import BatchPrefillWithPagedKVCacheWrapper, BatchPrefillWithRaggedKVCacheWrapper
from .runner import SharedPrefixRunner, SplitKVRunner

__all__ = ["BatchDecodeWithPagedKVCacheWrapper", "BatchPrefillWithPagedKVCacheWrapper",
           "BatchPrefillWithRaggedKVCacheWrapper", "MultiLevelCascadeAttentionWrapper",
           "FlashIRError", "JitError", "SharedPrefixRunner", "SplitKVRunner", "merge_state",
           "merge_state_in_place", "merge_states"]

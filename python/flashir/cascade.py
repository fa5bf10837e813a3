"""Shared-prefix (cascade) decode, FlashInfer's
``MultiLevelCascadeAttentionWrapper`` with two levels: a prefix every
request shares, read once by the split-KV prefill kernel for all the
requests' query rows, then each request's own suffix by the split-KV decode
kernel, the states merged per request (flashir.runner.SharedPrefixRunner)."""

from . import jit, options
from ._lib import _torch
from ._wrapper import (_check_layout, _check_workspace, _indptr, _kept_on_device,
                       _pow2_at_least)
from ._args import _int32_host
from .runner import SharedPrefixRunner

__all__ = ["MultiLevelCascadeAttentionWrapper"]


class MultiLevelCascadeAttentionWrapper:
    """``num_levels`` must be 2: level 0 one shared prefix over every query
    (qo_indptr_arr[0] = [0, batch]), level 1 one query row per request
    (qo_indptr_arr[1] = [0, 1, ..., batch]: decode). Position-free
    attention: ``sm_scale`` and ``logits_soft_cap``; the options that mask
    or read positions (causal, window_left, ALiBi, RoPE) are refused."""

    def __init__(self, num_levels, float_workspace_buffer=None, kv_layout="NHD",
                 use_cuda_graph=False, max_batch_size=None):
        if num_levels != 2:
            raise ValueError(f"num_levels: FlashIR's cascade has 2 levels (a shared prefix, "
                             f"then each request's suffix), got {num_levels!r}")
        self._workspace = _check_workspace(float_workspace_buffer)
        self._kv_layout = _check_layout(kv_layout)
        self._graph = bool(use_cuda_graph)
        self._max_batch = max_batch_size
        self._runner = None
        self._runner_key = None
        self._planned = None
        self._prefix_ids = None
        self._suffix_ids = None
        self._params = []
        self.compile_info = None

    def plan(self, qo_indptr_arr, paged_kv_indptr_arr, paged_kv_indices_arr,
             paged_kv_last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size,
             causal=False, pos_encoding_mode="NONE", use_fp16_qk_reduction=False,
             sm_scale=None, window_left=-1, logits_soft_cap=None, rope_scale=None,
             rope_theta=None, q_data_type="float16", kv_data_type=None):
        """Per-level lists (length 2) of int32 tensors, as FlashInfer's."""
        torch = _torch()
        for name, value in (("qo_indptr_arr", qo_indptr_arr),
                            ("paged_kv_indptr_arr", paged_kv_indptr_arr),
                            ("paged_kv_indices_arr", paged_kv_indices_arr),
                            ("paged_kv_last_page_len", paged_kv_last_page_len)):
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                raise TypeError(f"{name} must be a list of 2 tensors (one per level)")
        refused = [n for n, on in (("causal", causal), ("pos_encoding_mode",
                                                        pos_encoding_mode != "NONE"),
                                   ("window_left", window_left >= 0)) if on]
        if refused:
            raise ValueError(f"the cascade runs position-free attention (sm_scale, "
                             f"logits_soft_cap); got {', '.join(refused)}")
        spec, recipes = options.attention_options(
            num_qo_heads, num_kv_heads, head_dim, page_size, self._kv_layout,
            logits_soft_cap=logits_soft_cap, sm_scale=sm_scale, q_data_type=q_data_type,
            kv_data_type=kv_data_type)
        # Scalars only (the soft-cap): the same values serve both levels.
        self._params = [r.value for r in recipes]
        last1 = _int32_host("paged_kv_last_page_len[1]", paged_kv_last_page_len[1])
        batch = last1.numel()
        qo0 = _indptr("qo_indptr_arr[0]", qo_indptr_arr[0], 2)
        qo1 = _indptr("qo_indptr_arr[1]", qo_indptr_arr[1], batch + 1)
        if int(qo0[1]) != batch or not torch.equal(qo1, torch.arange(batch + 1,
                                                                     dtype=torch.int32)):
            raise ValueError(f"qo_indptr_arr: level 0 must be [0, {batch}] (one prefix for "
                             f"every request) and level 1 [0, 1, ..., {batch}] (decode)")
        kvp0 = _indptr("paged_kv_indptr_arr[0]", paged_kv_indptr_arr[0], 2)
        prefix = _int32_host("paged_kv_indices_arr[0]", paged_kv_indices_arr[0])
        last0 = _int32_host("paged_kv_last_page_len[0]", paged_kv_last_page_len[0])
        n0 = int(kvp0[1])
        if last0.numel() != 1 or prefix.numel() < n0:
            raise ValueError("level 0 needs one last_page_len and paged_kv_indptr_arr[0][1] "
                             "page ids")
        if n0 and not 1 <= int(last0[0]) <= page_size:
            raise ValueError(f"paged_kv_last_page_len[0][0] is {int(last0[0])}: 1..page_size "
                             f"({page_size}) keys on the prefix's last page")
        prefix = prefix[:n0]
        prefix_len = (n0 - 1) * page_size + int(last0[0]) if n0 else 0
        kvp1 = _indptr("paged_kv_indptr_arr[1]", paged_kv_indptr_arr[1], batch + 1)
        suffix = _int32_host("paged_kv_indices_arr[1]", paged_kv_indices_arr[1])
        if suffix.numel() < int(kvp1[-1]):
            raise ValueError(f"paged_kv_indices_arr[1] has {suffix.numel()} entries; "
                             f"paged_kv_indptr_arr[1] reaches {int(kvp1[-1])}")
        suffix = suffix[:int(kvp1[-1])]
        ids = torch.cat([prefix, suffix])
        if ids.numel() and int(ids.min()) < 0:
            raise IndexError("paged_kv_indices_arr holds a negative page id")
        num_pages = int(ids.max()) + 1 if ids.numel() else 1

        chip, image = jit.detect_chip()
        pre_dir, pre_info = jit.compile_spec(spec, chip, prefill=True)
        dec_dir, dec_info = jit.compile_spec(spec, chip)
        self.compile_info = dict(cached=pre_info["cached"] and dec_info["cached"],
                                 ms=pre_info["ms"] + dec_info["ms"])
        cap = self._runner_key[3] if self._runner_key else None
        if cap is None or (batch > cap and not self._graph):
            cap = self._max_batch or _pow2_at_least(batch, 16)
        if batch > cap:
            raise ValueError(f"capacity: the step has {batch} requests; this CUDA-graph "
                             f"wrapper was sized for {cap} (max_batch_size)")
        key = (pre_dir, dec_dir, image, cap)
        if key != self._runner_key:
            self._runner = None
            self._runner = SharedPrefixRunner(pre_dir, spec.function_name(), dec_dir,
                                              spec.function_name(), max_requests=cap,
                                              chip=image)
            self._runner_key = key
        self._runner.plan(prefix if n0 else torch.zeros(1, dtype=torch.int32), prefix_len,
                          kvp1, suffix, last1, num_pages)
        self._prefix_ids = self._upload(self._prefix_ids, prefix, "prefix")
        self._suffix_ids = self._upload(self._suffix_ids, suffix, "suffix")
        self._planned = dict(batch=batch, num_pages=num_pages, prefix=prefix.numel(),
                             suffix=suffix.numel())

    def _upload(self, buffer, ids, what):
        n = max(1, ids.numel())
        return _kept_on_device(
            buffer, ids, self._graph,
            lambda kept: f"capacity: the {what} has {ids.numel()} pages; this CUDA-graph "
                         f"wrapper's buffer holds {kept.numel()} (plan the largest step first)",
            need=n, size=_pow2_at_least(n, 256))

    def run(self, q, paged_kv_cache):
        """q [batch, Hq, D]; paged_kv_cache = (k_cache, v_cache). Returns
        out [batch, Hq, D]."""
        torch = _torch()
        if self._planned is None:
            raise RuntimeError("run() before plan()")
        if isinstance(paged_kv_cache, torch.Tensor) or len(paged_kv_cache) != 2:
            raise ValueError("paged_kv_cache must be a (k_cache, v_cache) pair")
        k, v = paged_kv_cache
        for name, t in (("paged_kv_cache[0]", k), ("paged_kv_cache[1]", v)):
            if isinstance(t, torch.Tensor) and t.dim() == 4 and \
                    t.shape[0] < self._planned["num_pages"]:
                raise IndexError(f"{name} holds {t.shape[0]} pages; the planned page ids "
                                 f"reach {self._planned['num_pages'] - 1}")
        out, _ = self._runner.run(q, (k, v), self._prefix_ids, self._suffix_ids,
                                  capacity_grids=self._graph, params=self._params)
        return out

    forward = run

"""FlashIR attention for HuggingFace transformers (5.x).

``register()`` adds two attention implementations:

* ``"fir"`` for ``generate()`` and plain forwards: the attention function
  plus a mask function that hands it the 2D padding mask (as
  FlashAttention's does). Each forward's valid queries and keys are packed
  (left or right padding dropped), run through FlashIR's decode kernel (one
  query per sequence) or prefill kernel, and unpacked.
* ``"paged|fir"`` for continuous batching (``generate_batch``): the packed
  step (all requests' new tokens, ``cu_seq_lens_q/k``) over transformers'
  ``PagedAttentionCache``. Full-attention layers write the new keys and
  values into the cache and read it in place through ``read_index`` (token
  slots as one-token pages, no gather); sliding-window layers, whose rolling
  cache transformers keeps itself, read what ``cache.update`` returns.

The names hold no "flash": transformers treats any implementation name
containing it as a FlashAttention request. Causal masking is bottom-right
(queries are their sequence's last tokens), ``sliding_window`` (Gemma-2's
local layers) becomes FlashInfer's ``window_left = sliding_window - 1``,
``softcap`` the logits soft-cap (transformers' own sdpa and paged paths drop
Gemma-2's soft-cap; FlashIR applies it, as eager does) and ``scaling`` the
scale. A step is planned once, at its first layer of a kind; the other
layers of the forward reuse the plan.

    from flashir.integrations import transformers as fir
    fir.register()
    model = LlamaForCausalLM._from_config(config, attn_implementation="fir")
"""

from .._lib import _torch
from ..decode import BatchDecodeWithPagedKVCacheWrapper
from ..prefill import BatchPrefillWithPagedKVCacheWrapper

__all__ = ["NAME", "PAGED_NAME", "register", "attention_forward", "paged_attention_forward"]

NAME = "fir"
PAGED_NAME = "paged|" + NAME


def register():
    """Registers ``"fir"`` (attention and mask functions) and
    ``"paged|fir"`` with transformers; call before loading a model with
    them."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import flash_attention_mask
    AttentionInterface.register(NAME, attention_forward)
    AttentionMaskInterface.register(NAME, flash_attention_mask)
    AttentionInterface.register(PAGED_NAME, paged_attention_forward)


class _Plans:
    """Wrappers by configuration and the current forward's plans. A forward
    starts at layer 0; its plans are kept until the next one starts."""

    def __init__(self):
        self.wrappers = {}
        self.planned = {}
        self.packing = {}

    def new_forward(self, layer_idx):
        if layer_idx == 0:
            self.planned = {}
            self.packing = {}

    def wrapper(self, key):
        """The wrapper of `key` = (decode, sorted options)."""
        decode = key[0]
        if key not in self.wrappers:
            workspace = _torch().empty(1, dtype=_torch().uint8, device="cuda")
            cls = BatchDecodeWithPagedKVCacheWrapper if decode else \
                BatchPrefillWithPagedKVCacheWrapper
            self.wrappers[key] = cls(workspace, "NHD")
        return self.wrappers[key]


_plans = _Plans()


def _options(module, query, key, scaling, sliding_window, softcap):
    """FlashInfer plan() options of a layer."""
    window = getattr(module, "sliding_window", None) if sliding_window is None else \
        sliding_window
    return dict(num_qo_heads=query.shape[1], num_kv_heads=key.shape[1],
                head_dim=query.shape[-1], page_size=1,
                window_left=int(window) - 1 if window else -1,
                logits_soft_cap=float(softcap) if softcap else None,
                sm_scale=float(scaling) if scaling is not None else None,
                q_data_type=query.dtype)


def _plan(tag, decode, options, tables):
    """The wrapper of `options` planned for this forward's step `tag`: at
    the step's first layer of that kind, `tables()` gives (qo_indptr,
    kv_indptr, kv_indices) and the step is planned; later layers reuse it."""
    torch = _torch()
    config = (decode, tuple(sorted(options.items())))
    wrapper = _plans.wrapper(config)
    key = (tag,) + config
    if key not in _plans.planned:
        qo_indptr, kv_indptr, kv_indices = tables()
        kv_lens = kv_indptr[1:] - kv_indptr[:-1]
        last = (kv_lens > 0).to(torch.int32)
        o = dict(options)
        shape = [o.pop(n) for n in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size")]
        if decode:
            wrapper.plan(kv_indptr, kv_indices, last, *shape, **o)
        else:
            wrapper.plan(qo_indptr, kv_indptr, kv_indices, last, *shape, causal=True, **o)
        _plans.planned[key] = True
    return wrapper


def _indptr(lengths):
    torch = _torch()
    out = torch.zeros(lengths.numel() + 1, dtype=torch.int32)
    out[1:] = lengths.to("cpu", torch.int64).cumsum(0)
    return out


def attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                      sliding_window=None, softcap=None, **kwargs):
    """transformers' attention function: query [B, Hq, Lq, D], key and value
    [B, Hkv, Lk, D] (the cache included), attention_mask the 2D padding mask
    [B, Lk] or None. Returns ([B, Lq, Hq, D], None)."""
    torch = _torch()
    if dropout:
        raise ValueError("dropout: FlashIR's kernels are for inference (dropout 0)")
    if not getattr(module, "is_causal", True):
        raise ValueError("FlashIR's transformers backend runs causal attention only")
    for name, t in (("query", query), ("key", key), ("value", value)):
        if hasattr(t, "placements"):  # a DTensor: each rank needs its own heads
            raise TypeError(f"{name} is a DTensor: FlashIR attends each rank's local heads; "
                            f"load the model with tp_plan='auto' on two or more ranks "
                            f"(whose projections hand attention local tensors)")
    _plans.new_forward(getattr(module, "layer_idx", 0))
    b, hq, lq, d = query.shape
    hkv, lk = key.shape[1], key.shape[2]
    q = query.transpose(1, 2).reshape(b * lq, hq, d)
    k = key.transpose(1, 2).reshape(b * lk, hkv, d)
    v = value.transpose(1, 2).reshape(b * lk, hkv, d)
    pack = _packing(attention_mask, b, lq, lk)
    if pack["q_idx"] is None:
        q_rows, k_rows, v_rows = q, k, v
    else:  # index_select: no host sync per layer (the step's indices are kept)
        q_rows = q.index_select(0, pack["q_idx"])
        k_rows, v_rows = k.index_select(0, pack["kv_idx"]), v.index_select(0, pack["kv_idx"])
    qo_lens, kv_lens = pack["qo_lens"], pack["kv_lens"]
    options = _options(module, query, key, scaling, sliding_window, softcap)
    decode = pack["decode"]

    def tables():
        kv_indptr = _indptr(kv_lens)
        return _indptr(qo_lens), kv_indptr, torch.arange(int(kv_indptr[-1]), dtype=torch.int32)

    wrapper = _plan(("dense", b, lq, lk, attention_mask is None), decode, options, tables)
    out = wrapper.run(q_rows.contiguous(), (k_rows.contiguous().unsqueeze(1),
                                            v_rows.contiguous().unsqueeze(1)))
    if pack["q_idx"] is None:
        return out.view(b, lq, hq, d), None
    full = out.new_zeros(b * lq, hq, d)
    full.index_copy_(0, pack["q_idx"], out)
    return full.view(b, lq, hq, d), None


def _packing(attention_mask, b, lq, lk):
    """The forward's packing of padded rows, computed at its first layer
    (the host syncs once per step, not per layer): the valid query and key
    rows' indices (None without a mask), their lengths per sequence (host)
    and whether the step is a decode step (one valid query per sequence)."""
    torch = _torch()
    key = (b, lq, lk, attention_mask is None)
    if key in _plans.packing:
        return _plans.packing[key]
    if attention_mask is None:
        pack = dict(q_idx=None, kv_idx=None, decode=lq == 1,
                    qo_lens=torch.full((b,), lq, dtype=torch.int32),
                    kv_lens=torch.full((b,), lk, dtype=torch.int32))
    else:
        mask = attention_mask.bool()
        q_mask = mask[:, -lq:]
        lens = torch.stack([q_mask.sum(1), mask.sum(1)]).cpu()
        pack = dict(q_idx=q_mask.reshape(-1).nonzero().squeeze(1),
                    kv_idx=mask.reshape(-1).nonzero().squeeze(1),
                    qo_lens=lens[0], kv_lens=lens[1],
                    decode=lq == 1 and bool((lens[0] == 1).all()))
    _plans.packing[key] = pack
    return pack


def paged_attention_forward(module, query, key, value, attention_mask, scaling=None,
                            dropout=0.0, sliding_window=None, softcap=None, **kwargs):
    """transformers' paged attention function (continuous batching): query
    [1, Hq, T, D] and key / value [1, Hkv, T, D] of the step's new tokens,
    the PagedAttentionCache in ``cache``, ``cu_seq_lens_q/k``,
    ``read_index`` / ``write_index`` per layer group. Returns ([T, Hq, D],
    None)."""
    torch = _torch()
    cache = kwargs.get("cache")
    if cache is None:
        raise ValueError(f"{PAGED_NAME} needs transformers' paged cache (generate_batch); use "
                         f"{NAME!r} for other forwards")
    if dropout:
        raise ValueError("dropout: FlashIR's kernels are for inference (dropout 0)")
    layer = module.layer_idx
    _plans.new_forward(layer)
    window = getattr(module, "sliding_window", None)
    layer_type = "sliding_attention" if window else "full_attention"
    cu_q, cu_k = kwargs["cu_seq_lens_q"], kwargs["cu_seq_lens_k"]
    if isinstance(cu_k, dict):
        cu_k = cu_k[layer_type]
    group, in_group = cache.layer_index_to_group_indices[layer]
    read_index = kwargs["read_index"][group]
    write_index = kwargs["write_index"][group]
    q = query[0].transpose(0, 1).contiguous()
    if window or read_index.numel() == 0:
        # Sliding layers' rolling cache (and a step of fresh prompts): what
        # the cache's update returns, each request's keys in order.
        k, v = cache.update(key_states=key, value_states=value, layer_idx=layer,
                            read_index=kwargs["read_index"], write_index=kwargs["write_index"])
        pools = (k.contiguous().unsqueeze(1), v.contiguous().unsqueeze(1))
        ids = torch.arange(k.shape[0], dtype=torch.int32)
        tag = ("gathered", group, k.shape[0])
    else:
        k_cache, v_cache = cache.key_cache[in_group], cache.value_cache[in_group]
        k_cache.index_copy_(0, write_index, key[0].transpose(0, 1))
        v_cache.index_copy_(0, write_index, value[0].transpose(0, 1))
        pools = (k_cache.unsqueeze(1), v_cache.unsqueeze(1))
        ids = read_index
        tag = ("in_place", group)
    # One query row per request: the decode kernel (T rows for T requests).
    decode = q.shape[0] == cu_q.numel() - 1
    options = _options(module, query, key, scaling, sliding_window, softcap)
    wrapper = _plan(tag, decode, options, lambda: (cu_q.to("cpu", torch.int32),
                                                   cu_k.to("cpu", torch.int32),
                                                   ids.to(torch.int32)))
    return wrapper.run(q, pools), None

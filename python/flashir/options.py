"""FlashInfer's plan() options as FlashIR kernels and their parameters.

``attention_options(...)`` takes the options a FlashInfer user passes to
``plan()`` (head counts, head dim, page size, layout, causal, window_left,
logits_soft_cap, sm_scale, pos_encoding_mode with rope_theta / rope_scale,
whether a custom mask is given, data types) and returns the
``AttentionSpec`` the JIT compiles and ``ParamRecipe``s of the values its
run() takes, in the variant's parameter order. Pure Python (no torch).
"""

import math
from dataclasses import dataclass

from . import ir

__all__ = ["ParamRecipe", "alibi_slopes", "attention_options", "variant_options"]


@dataclass(frozen=True)
class ParamRecipe:
    """One run() parameter: ``kind`` "scalar" (``value``), "per_request"
    (``value`` repeated for each request: int32), "per_head" (``values``:
    float32 per query head) or "custom_mask" (``name`` bits, row0 or stride
    of the standard custom_mask variant: the wrapper derives them from the
    mask it is given and the requests' lengths) or "given" (``value``: the
    caller's number or tensor, as it is)."""
    name: str
    kind: str
    value: object = 0.0
    values: tuple = ()


def alibi_slopes(num_heads):
    """ALiBi's head slopes (Press et al.; FlashInfer's get_alibi_slopes):
    2^(-8 i / n) for the closest power of two n <= num_heads, then every
    other slope of 2n for the remaining heads."""
    if not isinstance(num_heads, int) or num_heads < 1:
        raise ValueError(f"num_heads must be a positive int, got {num_heads!r}")
    n = 2 ** int(math.floor(math.log2(num_heads)))
    slopes = [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]
    extra = [2.0 ** (-4.0 * (2 * i + 1) / n) for i in range(num_heads - n)]
    return tuple(slopes + extra)


def _positive_number(name, value):
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value <= 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def attention_options(num_qo_heads, num_kv_heads, head_dim, page_size, kv_layout="NHD",
                      causal=False, window_left=-1, logits_soft_cap=None, sm_scale=None,
                      pos_encoding_mode="NONE", q_data_type="float16", kv_data_type=None,
                      rope_scale=None, rope_theta=None, custom_mask=False):
    """(AttentionSpec, [ParamRecipe]) of FlashInfer's plan() options.
    Decode is causal=False (one query row sees every key either way).
    ``custom_mask``: whether the plan has a (packed) custom mask; it is
    FlashInfer's whole mask (causal and window_left must be off) and takes
    no other option (soft-cap, ALiBi, RoPE) yet."""
    kv_data_type = kv_data_type or q_data_type
    if ir.element_type(q_data_type) != ir.element_type(kv_data_type):
        raise ValueError(f"kv_data_type ({kv_data_type}) must equal q_data_type "
                         f"({q_data_type}): FlashIR's kernels read one element type")
    if isinstance(window_left, bool) or not isinstance(window_left, int):
        raise TypeError(f"window_left must be an int, got {window_left!r}")
    soft_cap = logits_soft_cap is not None and logits_soft_cap != 0
    if soft_cap:
        _positive_number("logits_soft_cap", logits_soft_cap)
    modes = ("NONE", "ROPE_LLAMA", "ALIBI")
    if pos_encoding_mode not in modes:
        raise ValueError(f"pos_encoding_mode must be one of {', '.join(modes)}, got "
                         f"{pos_encoding_mode!r}")
    alibi = pos_encoding_mode == "ALIBI"
    rope = pos_encoding_mode == "ROPE_LLAMA"
    theta = _positive_number("rope_theta", 1e4 if rope_theta is None else rope_theta)
    scale = _positive_number("rope_scale", 1.0 if rope_scale is None else rope_scale)
    window = window_left >= 0
    if custom_mask:
        clash = [n for n, on in (("causal", causal), ("window_left", window),
                                 ("logits_soft_cap", soft_cap),
                                 ("pos_encoding_mode", alibi or rope))
                 if on]
        if clash:
            raise ValueError(f"custom_mask is the whole mask and takes no other option yet; "
                             f"got {', '.join(clash)} too")
        name, text = "custom_mask", ""
    else:
        name, text = ir.composed_variant(causal, window, soft_cap, alibi,
                                         head_dim if rope else None)
    spec = ir.AttentionSpec(num_qo_heads, num_kv_heads, head_dim, page_size, kv_layout,
                            q_data_type, name, text, sm_scale)
    recipes = []
    for param in spec.params:
        if param.name == "cap":
            recipes.append(ParamRecipe("cap", "scalar", value=float(logits_soft_cap)))
        elif param.name == "window_left":
            recipes.append(ParamRecipe("window_left", "per_request", value=window_left))
        elif param.name == "slope":
            recipes.append(ParamRecipe("slope", "per_head",
                                       values=alibi_slopes(num_qo_heads)))
        elif param.name == "log2_theta":
            recipes.append(ParamRecipe("log2_theta", "scalar", value=math.log2(theta)))
        elif param.name == "rcp_scale":
            recipes.append(ParamRecipe("rcp_scale", "scalar", value=1.0 / scale))
        elif custom_mask and param.name in ("bits", "row0", "stride"):
            recipes.append(ParamRecipe(param.name, "custom_mask"))
        else:  # composed_variant declares no other parameter
            raise AssertionError(f"no recipe for parameter {param.name}")
    return spec, recipes


def variant_options(num_qo_heads, num_kv_heads, head_dim, page_size, kv_layout, variant,
                    variant_params=(), sm_scale=None, q_data_type="float16",
                    kv_data_type=None):
    """(AttentionSpec, [ParamRecipe]) of a variant given by name (a standard
    variant, e.g. "sigmoid") or as attn IR text (an ``attn.variant``, see
    docs/WritingVariants.md), with `variant_params` in its declaration
    order: a number per scalar parameter, a tensor per per-request,
    per-head or buffer one."""
    kv_data_type = kv_data_type or q_data_type
    if ir.element_type(q_data_type) != ir.element_type(kv_data_type):
        raise ValueError(f"kv_data_type ({kv_data_type}) must equal q_data_type "
                         f"({q_data_type}): FlashIR's kernels read one element type")
    if not isinstance(variant, str) or not variant.strip():
        raise TypeError("variant must be a standard variant's name or attn.variant IR text")
    text = variant if "attn.variant" in variant else ""
    spec = ir.AttentionSpec(num_qo_heads, num_kv_heads, head_dim, page_size, kv_layout,
                            q_data_type, "plain" if text else variant, text, sm_scale)
    values = list(variant_params or ())
    if len(values) != len(spec.params):
        names = ", ".join(f"{p.name} ({p.kind})" for p in spec.params) or "none"
        raise TypeError(f"variant_params: @{spec.variant} takes {len(spec.params)} parameters "
                        f"({names}), got {len(values)}")
    return spec, [ParamRecipe(p.name, "given", value=v) for p, v in zip(spec.params, values)]

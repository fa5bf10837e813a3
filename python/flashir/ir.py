"""attn IR for an attention configuration: what the JIT compiles.

An ``AttentionSpec`` names everything that changes the kernels (head
counts, head dim, page size, KV layout, data type, variant and its
parameters); ``attention_module`` writes the attn function the compiler
turns into kernels. Variants are the standard library's by name
(``lib/Dialect/Attn/IR/StandardVariants.mlir``) or a user's ``attn.variant``
text (docs/WritingVariants.md), whose parameters are read from its header.
"""

import math
import re
from dataclasses import dataclass, field

__all__ = ["Param", "AttentionSpec", "STANDARD_VARIANTS", "element_type", "variant_params",
           "composed_variant", "attention_module"]


@dataclass(frozen=True)
class Param:
    """A variant parameter: its name, element type (``f32``, ``i32``,
    ``i64``; ``tensor<?xi8>`` for buffers) and kind (``scalar``,
    ``per_request``, ``per_head``, ``buffer``)."""
    name: str
    type: str
    kind: str

    def arg_type(self):
        """The attn function argument's type that carries it."""
        if self.kind == "scalar":
            return self.type
        if self.kind == "buffer":
            return self.type
        return f"tensor<?x{self.type}>"


# The standard library's variants and their parameters, in order.
STANDARD_VARIANTS = {
    "plain": (),
    "causal": (),
    "sliding_window": (Param("window_left", "i32", "per_request"),),
    "soft_cap": (Param("cap", "f32", "scalar"),),
    "alibi": (Param("slope", "f32", "per_head"),),
    "custom_mask": (Param("bits", "tensor<?xi8>", "buffer"),
                    Param("row0", "i64", "per_request"),
                    Param("stride", "i64", "per_request")),
    "sigmoid": (Param("bias", "f32", "scalar"),),
}

_KINDS = ("scalar", "per_request", "per_head", "buffer")
_HEADER = re.compile(r"attn\.variant\s+@([A-Za-z_][\w$.]*)\s+reduction\s+\w+\s*"
                     r"(?:params\s*\(([^)]*)\))?")


def variant_params(variant_ir):
    """(name, params) of the first ``attn.variant`` in `variant_ir`."""
    match = _HEADER.search(variant_ir)
    if not match:
        raise ValueError("variant_ir holds no 'attn.variant @name reduction ...' header")
    params = []
    for item in filter(None, (p.strip() for p in (match.group(2) or "").split(","))):
        m = re.fullmatch(r"([A-Za-z_]\w*)\s*:\s*(\S+)\s+(\w+)", item)
        if not m or m.group(3) not in _KINDS:
            raise ValueError(f"variant parameter {item!r}: expected 'name : type kind' with "
                             f"kind one of {', '.join(_KINDS)}")
        params.append(Param(m.group(1), m.group(2), m.group(3)))
    return match.group(1), tuple(params)


def _rope_hook(hook, pos, half, args):
    """A `query` or `key` hook rotating x by LLaMA's RoPE (rotate-half
    pairs, dim i and i + half): angle = pos * rcp_scale * theta^(-i/half),
    theta = 2^log2_theta."""
    return [
        f"  {hook}(%x: f32, %xr: f32, %d: index, %{pos}: index, %head: index{args}) {{",
        f"    %half = arith.constant {half} : index",
        f"    %halff = arith.constant {float(half)!r} : f32",
        "    %i = arith.remui %d, %half : index",
        "    %ii = arith.index_cast %i : index to i32",
        "    %if = arith.uitofp %ii : i32 to f32",
        "    %frac = arith.divf %if, %halff : f32",
        "    %e = arith.mulf %frac, %log2_theta : f32",
        "    %ne = arith.negf %e : f32",
        "    %freq = math.exp2 %ne : f32",
        f"    %p = arith.index_cast %{pos} : index to i32",
        "    %pf = arith.sitofp %p : i32 to f32",
        "    %ps = arith.mulf %pf, %rcp_scale : f32",
        "    %a = arith.mulf %ps, %freq : f32",
        "    %c = math.cos %a : f32",
        "    %s = math.sin %a : f32",
        "    %first = arith.cmpi ult, %d, %half : index",
        "    %nxr = arith.negf %xr : f32",
        "    %rot = arith.select %first, %nxr, %xr : f32",
        "    %xc = arith.mulf %x, %c : f32",
        "    %rs = arith.mulf %rot, %s : f32",
        "    %y = arith.addf %xc, %rs : f32",
        "    attn.yield %y : f32",
        "  }"]


def composed_variant(causal=False, window=False, soft_cap=False, alibi=False, rope_dim=None):
    """(variant name, variant IR) of FlashInfer's attention options: a
    bottom-right `causal` mask, a sliding `window` (per-request window_left:
    kpos >= qpos - window_left where >= 0), logits `soft_cap` (cap * tanh(s /
    cap)), `alibi` (s + slope[head] * (kpos - qpos), before the soft-cap) and,
    with `rope_dim` (the head dim), LLaMA's RoPE applied to queries at qpos
    and keys at kpos. The standard variant where one is exactly that (IR
    ""), else a composed one; its parameters, in order: cap (f32 scalar),
    window_left (i32 per_request), slope (f32 per_head), log2_theta and
    rcp_scale (f32 scalars: log2 of rope_theta, 1 / rope_scale)."""
    rope = rope_dim is not None
    if rope and (isinstance(rope_dim, bool) or not isinstance(rope_dim, int) or rope_dim < 2
                 or rope_dim % 2):
        raise ValueError(f"rope_dim must be an even head dim, got {rope_dim!r}")
    if rope and alibi:
        raise ValueError("alibi and rope_dim: one position encoding at a time (the key hook "
                         "that RoPE adds sees KV heads, ALiBi's slopes are per query head)")
    flags = (bool(causal), bool(window), bool(soft_cap), bool(alibi))
    standard = {(False, False, False, False): "plain", (True, False, False, False): "causal",
                (True, True, False, False): "sliding_window",
                (True, False, True, False): "soft_cap", (True, False, False, True): "alibi"}
    if flags in standard and not rope:
        return standard[flags], ""
    causal, window, soft_cap, alibi = flags
    name = "fi" + "".join(f"_{n}" for n, on in zip(
        ("causal", "window", "softcap", "alibi", "rope"), flags + (rope,)) if on)
    params = [p for p, on in (("cap : f32 scalar", soft_cap),
                              ("window_left : i32 per_request", window),
                              ("slope : f32 per_head", alibi),
                              ("log2_theta : f32 scalar", rope),
                              ("rcp_scale : f32 scalar", rope)) if on]
    args = "".join(a for a, on in ((", %cap: f32", soft_cap), (", %window_left: i32", window),
                                   (", %slope: f32", alibi), (", %log2_theta: f32", rope),
                                   (", %rcp_scale: f32", rope)) if on)
    lines = [f"attn.variant @{name} reduction softmax"
             + (f" params({', '.join(params)})" if params else "") + " {"]
    if rope:
        lines += _rope_hook("query", "qpos", rope_dim // 2, args)
        lines += _rope_hook("key", "kpos", rope_dim // 2, args)
    if soft_cap or alibi:
        lines.append(f"  logits(%s: f32, %qpos: index, %kpos: index, %head: index{args}) {{")
        value = "%s"
        if alibi:
            lines += ["    %k = arith.index_cast %kpos : index to i64",
                      "    %q = arith.index_cast %qpos : index to i64",
                      "    %d = arith.subi %k, %q : i64",
                      "    %df = arith.sitofp %d : i64 to f32",
                      "    %bias = arith.mulf %slope, %df : f32",
                      "    %biased = arith.addf %s, %bias : f32"]
            value = "%biased"
        if soft_cap:
            lines += [f"    %x = arith.divf {value}, %cap : f32",
                      "    %t = math.tanh %x : f32",
                      "    %capped = arith.mulf %t, %cap : f32"]
            value = "%capped"
        lines += [f"    attn.yield {value} : f32", "  }"]
    if causal or window:
        lines.append(f"  mask(%qpos: index, %kpos: index, %head: index{args}) {{")
        keep = []
        if causal:
            lines.append("    %causal = arith.cmpi sle, %kpos, %qpos : index")
            keep.append("%causal")
        if window:
            lines += ["    %zero = arith.constant 0 : i32",
                      "    %unbounded = arith.cmpi slt, %window_left, %zero : i32",
                      "    %w = arith.index_cast %window_left : i32 to index",
                      "    %reach = arith.addi %kpos, %w : index",
                      "    %inside = arith.cmpi sge, %reach, %qpos : index",
                      "    %near = arith.ori %unbounded, %inside : i1"]
            keep.append("%near")
        if len(keep) == 2:
            lines.append("    %keep = arith.andi %causal, %near : i1")
            keep = ["%keep"]
        lines += [f"    attn.yield {keep[0]} : i1", "  }"]
    lines.append("}")
    return name, "\n".join(lines) + "\n"


_DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "f16": "f16", "float16": "f16", "half": "f16"}


def element_type(dtype):
    """attn's element type ("bf16" or "f16") of a dtype name or torch dtype,
    or None."""
    return _DTYPES.get(str(dtype).replace("torch.", ""))


@dataclass(frozen=True)
class AttentionSpec:
    """An attention over a paged KV cache (ragged queries), as
    ``attn.attention`` sees it. ``variant``: a standard variant's name, or
    the name inside ``variant_ir`` (a user's ``attn.variant``)."""
    num_qo_heads: int
    num_kv_heads: int
    head_dim: int
    page_size: int
    kv_layout: str = "NHD"
    dtype: str = "bf16"
    variant: str = "plain"
    variant_ir: str = ""
    sm_scale: float = None
    params: tuple = field(default=(), compare=False)

    def __post_init__(self):
        for name in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.num_qo_heads % self.num_kv_heads:
            raise ValueError(f"num_qo_heads ({self.num_qo_heads}) must be a multiple of "
                             f"num_kv_heads ({self.num_kv_heads})")
        if self.kv_layout.upper() not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {self.kv_layout!r}")
        object.__setattr__(self, "kv_layout", self.kv_layout.upper())
        dtype = element_type(self.dtype)
        if dtype is None:
            raise ValueError(f"dtype must be bf16 or f16, got {self.dtype!r}")
        object.__setattr__(self, "dtype", dtype)
        if self.sm_scale is not None:
            if (isinstance(self.sm_scale, bool) or not isinstance(self.sm_scale, (int, float))
                    or not math.isfinite(self.sm_scale) or self.sm_scale <= 0):
                raise ValueError(f"sm_scale must be a positive finite number, got "
                                 f"{self.sm_scale!r}")
            object.__setattr__(self, "sm_scale", float(self.sm_scale))
        if self.variant_ir:
            name, params = variant_params(self.variant_ir)
            if self.variant not in ("plain", name):
                raise ValueError(f"variant {self.variant!r} is not the one variant_ir "
                                 f"defines (@{name})")
            object.__setattr__(self, "variant", name)
        elif self.variant in STANDARD_VARIANTS:
            params = STANDARD_VARIANTS[self.variant]
        else:
            raise ValueError(f"unknown variant {self.variant!r}: one of "
                             f"{', '.join(STANDARD_VARIANTS)}, or pass its attn IR as "
                             f"variant_ir")
        object.__setattr__(self, "params", params)

    def function_name(self):
        g = self.num_qo_heads // self.num_kv_heads
        name = (f"{self.variant}_h{self.num_qo_heads}_g{g}_d{self.head_dim}_p{self.page_size}"
                f"_{self.dtype}_{self.kv_layout.lower()}")
        if self.sm_scale is not None:
            name += "_scale" + f"{self.sm_scale:.6e}".replace(".", "p").replace("-", "m").replace(
                "+", "")
        return name


def attention_module(spec):
    """The attn program (variant text, if a user's, and one function) of
    `spec`; its function is ``spec.function_name()``."""
    d, e = spec.head_dim, spec.dtype
    hq, hkv, p = spec.num_qo_heads, spec.num_kv_heads, spec.page_size
    pool_dims = f"{p}x{hkv}" if spec.kv_layout == "NHD" else f"{hkv}x{p}"
    pool = f"tensor<?x{pool_dims}x{d}x{e}>"
    kv_type = (f"!attn.paged_kv<page_size = {p}, layout = {spec.kv_layout.lower()}, "
               f"heads = {hkv}, head_dim = {d}, {e}>")
    q_type = f"!attn.ragged_q<heads = {hq}, head_dim = {d}, {e}>"
    out_types = f"tensor<?x{hq}x{d}x{e}>, tensor<?x{hq}xf32>"
    args = [f"%k: {pool}", f"%v: {pool}", "%indptr: tensor<?xi32>", "%indices: tensor<?xi32>",
            "%last: tensor<?xi32>", f"%queries: tensor<?x{hq}x{d}x{e}>", "%qo: tensor<?xi32>"]
    args += [f"%p_{prm.name}: {prm.arg_type()}" for prm in spec.params]
    attrs = f"num_qo_heads = {hq} : i64, num_kv_heads = {hkv} : i64"
    if spec.sm_scale is not None:
        attrs += f", scale = {spec.sm_scale:.9e} : f32"
    params = ""
    if spec.params:
        names = ", ".join(f"%p_{prm.name}" for prm in spec.params)
        types = ", ".join(prm.arg_type() for prm in spec.params)
        params = f" params({names} : {types})"
    lines = []
    if spec.variant_ir:
        lines += [spec.variant_ir.strip(), ""]
    lines += [
        f"func.func @{spec.function_name()}({', '.join(args)}) -> ({out_types}) {{",
        f"  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last : {pool}, {pool} -> {kv_type}",
        f"  %q = attn.ragged_q %queries, %qo : tensor<?x{hq}x{d}x{e}> -> {q_type}",
        f"  %o, %l = attn.attention @{spec.variant}(%q, %kv){params}",
        f"      {{{attrs}}} : {q_type}, {kv_type}",
        f"      -> {out_types}",
        f"  return %o, %l : {out_types}",
        "}",
    ]
    return "\n".join(lines) + "\n"

"""Checks of the tensors a wrapper's plan() and run() take: each error names
the argument."""

import ctypes

from ._lib import Param, _torch


def _int32_host(name, t):
    torch = _torch()
    if not isinstance(t, torch.Tensor) or t.dim() != 1:
        raise TypeError(f"{name} must be a 1-D tensor")
    if t.dtype != torch.int32:
        raise TypeError(f"{name} must be int32, got {t.dtype}")
    return t.detach().to("cpu").contiguous()


def _page_ids_for(kv_indptr, kv_indices):
    """Host kv_indices checked to hold the kv_indptr's pages; an empty one
    becomes one zero (the C API takes a non-null array)."""
    if kv_indices.numel() < int(kv_indptr.max()):
        raise ValueError(f"kv_indices has {kv_indices.numel()} entries; kv_indptr "
                         f"reaches {int(kv_indptr.max())}")
    if kv_indices.numel() == 0:
        return _torch().zeros(1, dtype=_torch().int32)
    return kv_indices


_STEP_NAMES = ("q", "k_pool", "v_pool")


def _check_step_tensors(w, q, rows, k_pool, v_pool, names=_STEP_NAMES):
    """q [rows, Hq, D] and the pools [num_pages, page_size, Hkv, D] of
    wrapper `w`: CUDA, w.dtype, contiguous, the kernels' shapes; errors
    name the arguments by `names` (q's, then the pools')."""
    torch = _torch()
    q_name, k_name, v_name = names
    for name, t in ((q_name, q), (k_name, k_pool), (v_name, v_pool)):
        if not isinstance(t, torch.Tensor) or not t.is_cuda:
            raise ValueError(f"{name} must be a CUDA tensor, got {type(t).__name__}"
                             + (f" on {t.device}" if isinstance(t, torch.Tensor) else ""))
        if t.dtype != w.dtype:
            raise TypeError(f"{name} must be {w.dtype}, got {t.dtype}")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous")
    if tuple(q.shape) != (rows, w.num_qo_heads, w.head_dim):
        raise ValueError(f"{q_name} must be [{rows}, {w.num_qo_heads}, {w.head_dim}] "
                         f"for the planned step, got {list(q.shape)}")
    # The kernels' pool layout (the manifest's kv_layout).
    layout = getattr(w, "kv_layout", "nhd")
    inner = (w.page_size, w.num_kv_heads, w.head_dim)
    if layout == "hnd":
        inner = (w.num_kv_heads, w.page_size, w.head_dim)
    for name, t in ((k_name, k_pool), (v_name, v_pool)):
        if t.dim() != 4 or tuple(t.shape[1:]) != inner:
            raise ValueError(f"{name} must be [num_pages, {', '.join(map(str, inner))}] "
                             f"({layout.upper()}), got {list(t.shape)}")
    if v_pool.shape[0] != k_pool.shape[0]:
        raise ValueError(f"{k_name} and {v_name} hold different numbers of pages")


_ELEMENTS = {"f32": "float32", "i32": "int32", "i64": "int64", "i8": "int8"}


def _param_array(specs, params):
    """`params` (the variant's, in declaration order: a number per scalar, a
    CUDA tensor per per-request / per-head / buffer parameter) checked
    against the kernel's manifest arguments `specs`, as a FlashIRParam
    array (None for none)."""
    torch = _torch()
    params = list(params or ())
    if len(params) != len(specs):
        names = ", ".join(s["name"] for s in specs) or "none"
        raise TypeError(f"params: the variant takes {len(specs)} parameters ({names}), "
                        f"got {len(params)}")
    if not specs:
        return None
    array = (Param * len(specs))()
    for slot, spec, value in zip(array, specs, params):
        name = f"params[{spec['name']}]"
        if spec["kind"] != "memref":
            if spec["element"] in ("i32", "i64"):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise TypeError(f"{name} must be an int ({spec['element']}), got "
                                    f"{type(value).__name__}")
                if spec["element"] == "i32" and not -2**31 <= value < 2**31:
                    raise ValueError(f"{name} is out of the i32 range: {value}")
                slot.integer = value
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__}")
            slot.scalar = float(value)
            continue
        if not isinstance(value, torch.Tensor) or not value.is_cuda:
            raise TypeError(f"{name} must be a CUDA tensor ({spec['param_kind']})")
        wanted = _ELEMENTS.get(spec["element"])
        allowed = {wanted} | ({"uint8"} if wanted == "int8" else set())
        if str(value.dtype).replace("torch.", "") not in allowed:
            raise TypeError(f"{name} must be {wanted}, got {value.dtype}")
        if value.dim() != 1 or not value.is_contiguous():
            raise ValueError(f"{name} must be a contiguous 1-D tensor, got "
                             f"{list(value.shape)}")
        slot.pointer = ctypes.c_void_p(value.data_ptr())
        slot.size = value.numel()
    return array


def _planned_step(w, q, paged_kv_cache, rows_key, names=_STEP_NAMES):
    """(k_pool, v_pool, rows) of run() on wrapper `w` after its plan():
    q and the pools checked against the planned step (`rows_key` of
    w._planned: its query rows)."""
    if w._planned is None:
        raise RuntimeError("run() before plan()")
    k_pool, v_pool = paged_kv_cache
    rows = w._planned[rows_key]
    _check_step_tensors(w, q, rows, k_pool, v_pool, names)
    return k_pool, v_pool, rows

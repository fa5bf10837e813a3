"""Merging attention states (eq. 6 of the design), FlashInfer's
``merge_state``, ``merge_state_in_place`` and ``merge_states``: f16 / bf16
states through FlashIR's split-KV merge kernel (compiled on first use for
the heads, head dim and dtype), other dtypes (e.g. float64 references) with
PyTorch ops. A state is (v, s): v the normalised output, s its log-sum-exp
(natural log, float32; FlashInfer's is base 2); s = -inf is the empty
state."""

import ctypes
import math

from . import ir, jit
from ._bundle import _kernel_named, _manifest
from ._lib import _check, _library, _on_current_device, _torch

__all__ = ["merge_state", "merge_state_in_place", "merge_states"]

_kernels = {}  # (heads, head dim, dtype, chip) -> _MergeKernel


class _MergeKernel:
    """A loaded merge kernel (flashirMerge*)."""

    def __init__(self, heads, head_dim, dtype, chip, image):
        spec = ir.AttentionSpec(heads, heads, head_dim, 16, dtype=dtype)
        folder, _ = jit.compile_spec(spec, chip)
        entry = _kernel_named(_manifest(folder), spec.function_name(), "decode")
        handle = ctypes.c_void_p()
        _on_current_device()
        _check(_library().flashirMergeCreate(folder.encode(), image.encode(),
                                             entry["merge_kernel"].encode(),
                                             ctypes.byref(handle)))
        self._handle = handle

    def __del__(self):
        if getattr(self, "_handle", None):
            _library().flashirMergeDestroy(self._handle)
            self._handle = None

    def run(self, states, lse, rows, n):
        torch = _torch()
        device = states.device
        heads, dim = states.shape[-2:]
        row_indptr = torch.arange(rows + 1, dtype=torch.int32, device=device)
        state_indptr = torch.arange(0, rows * n + 1, n, dtype=torch.int32, device=device)
        out = torch.empty((rows, heads, dim), dtype=states.dtype, device=device)
        out_lse = torch.empty((rows, heads), dtype=torch.float32, device=device)
        v = lambda t: ctypes.c_void_p(t.data_ptr())
        stream = torch.cuda.current_stream(device).cuda_stream
        _check(_library().flashirMergeRun(self._handle, v(row_indptr), v(state_indptr),
                                          v(states), v(lse), v(out), v(out_lse), rows, n,
                                          ctypes.c_void_p(stream)))
        return out, out_lse


def _merge_kernel(heads, head_dim, dtype, device):
    chip, image = jit.detect_chip(device)
    key = (heads, head_dim, dtype, chip)
    if key not in _kernels:
        _kernels[key] = _MergeKernel(heads, head_dim, dtype, chip, image)
    return _kernels[key]


def _check_states(v, s, v_name, s_name):
    torch = _torch()
    if not isinstance(v, torch.Tensor) or not isinstance(s, torch.Tensor):
        raise TypeError(f"{v_name} and {s_name} must be tensors")
    if v.dim() < 2 or tuple(v.shape[:-1]) != tuple(s.shape):
        raise ValueError(f"{v_name} [..., H, D] and {s_name} [..., H] must agree, got "
                         f"{list(v.shape)} and {list(s.shape)}")
    if v.device != s.device:
        raise ValueError(f"{v_name} and {s_name} must be on one device")


def _merge_torch(v, s):
    """merge_states with PyTorch ops: v [rows, n, H, D], s [rows, n, H]."""
    torch = _torch()
    sf = s.double() if v.dtype == torch.float64 else s.float()
    m = sf.max(dim=1).values
    m_safe = torch.where(torch.isinf(m) & (m < 0), torch.zeros_like(m), m)
    w = torch.exp(sf - m_safe[:, None])
    total = w.sum(dim=1)
    denom = torch.where(total > 0, total, torch.ones_like(total))
    acc = v.to(sf.dtype) * w[..., None]
    out = acc.sum(dim=1) / denom[..., None]
    lse = torch.where(total > 0, m_safe + torch.log(denom), torch.full_like(m, -math.inf))
    return out.to(v.dtype), lse


def merge_states(v, s):
    """Merges n states per row: v [rows, n, H, D], s [rows, n, H] (float32)
    -> (v [rows, H, D], s [rows, H])."""
    torch = _torch()
    _check_states(v, s, "v", "s")
    if v.dim() != 4:
        raise ValueError(f"v must be [rows, num_states, H, D], got {list(v.shape)}")
    rows, n, heads, dim = v.shape
    if n == 0:
        raise ValueError("merge_states needs at least one state per row")
    if rows == 0:
        return v.new_empty((0, heads, dim)), s.new_empty((0, heads)).float()
    element = ir.element_type(v.dtype)
    if not v.is_cuda or element is None:
        return _merge_torch(v, s)
    if s.dtype != torch.float32:
        raise TypeError(f"s must be float32 (log-sum-exps), got {s.dtype}")
    if n == 1:
        return v[:, 0].clone(), s[:, 0].clone()
    kernel = _merge_kernel(heads, dim, element, v.device)
    return kernel.run(v.contiguous().view(rows * n, heads, dim),
                      s.contiguous().view(rows * n, heads), rows, n)


def merge_state(v_a, s_a, v_b, s_b):
    """Merges two states: v [rows, H, D], s [rows, H] each; empty states
    (s = -inf) are identities. Returns (v, s)."""
    _check_states(v_a, s_a, "v_a", "s_a")
    _check_states(v_b, s_b, "v_b", "s_b")
    if v_a.shape != v_b.shape or v_a.dtype != v_b.dtype:
        raise ValueError(f"v_a and v_b must have one shape and dtype, got {list(v_a.shape)} "
                         f"{v_a.dtype} and {list(v_b.shape)} {v_b.dtype}")
    torch = _torch()
    lead = v_a.shape[:-2]
    va = v_a.reshape(-1, *v_a.shape[-2:])
    vb = v_b.reshape(-1, *v_b.shape[-2:])
    sa = s_a.reshape(-1, s_a.shape[-1])
    sb = s_b.reshape(-1, s_b.shape[-1])
    v, s = merge_states(torch.stack([va, vb], 1), torch.stack([sa, sb], 1))
    return v.view(*lead, *v.shape[-2:]), s.view(*lead, s.shape[-1])


def merge_state_in_place(v, s, v_other, s_other, mask=None):
    """Merges (v_other, s_other) into (v, s) in place; ``mask`` (bool
    [rows]): only the rows where it is true."""
    torch = _torch()
    mv, ms = merge_state(v, s, v_other, s_other)
    if mask is None:
        v.copy_(mv)
        s.copy_(ms.to(s.dtype))
        return
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool \
            or tuple(mask.shape) != tuple(v.shape[:1]):
        raise ValueError(f"mask must be a bool tensor of shape [{v.shape[0]}]")
    v[mask] = mv[mask]
    s[mask] = ms[mask].to(s.dtype)

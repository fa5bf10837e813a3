"""Merging attention states (eq. 6 of the design)."""

import math

from ._lib import _torch

__all__ = ["merge_state", "merge_states"]


def merge_state(v_a, s_a, v_b, s_b):
    """Merges two attention states (eq. 6): v [..., H, D] normalised outputs,
    s [..., H] their log-sum-exp. Empty states (s = -inf) are identities.
    Computed in float32 with PyTorch ops; returns (v, s) in v_a's dtype."""
    torch = _torch()
    if v_a.shape != v_b.shape or s_a.shape != s_b.shape or v_a.shape[:-1] != s_a.shape:
        raise ValueError(f"merge_state needs v [..., H, D] and s [..., H] of equal shapes, "
                         f"got {list(v_a.shape)}, {list(s_a.shape)}, {list(v_b.shape)}, "
                         f"{list(s_b.shape)}")
    sa, sb = s_a.float(), s_b.float()
    m = torch.maximum(sa, sb)
    m_safe = torch.where(torch.isinf(m) & (m < 0), torch.zeros_like(m), m)
    wa, wb = torch.exp(sa - m_safe), torch.exp(sb - m_safe)
    total = wa + wb
    denom = torch.where(total > 0, total, torch.ones_like(total))
    v = (v_a.float() * wa[..., None] + v_b.float() * wb[..., None]) / denom[..., None]
    s = torch.where(total > 0, m_safe + torch.log(denom), torch.full_like(m, -math.inf))
    return v.to(v_a.dtype), s


def merge_states(v, s):
    """Merges states along dim 0: v [n, ..., H, D], s [n, ..., H]."""
    if v.shape[0] == 0:
        raise ValueError("merge_states needs at least one state")
    out_v, out_s = v[0], s[0]
    for i in range(1, v.shape[0]):
        out_v, out_s = merge_state(out_v, out_s, v[i], s[i])
    return out_v, out_s

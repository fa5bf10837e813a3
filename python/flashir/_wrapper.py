"""What the FlashInfer-named paged wrappers share: plan()'s page-table
checks, the kernels compiled on first use for the current device, a runner
sized for the capacity, the variant's parameters on the device, and run()'s
argument checks and outputs."""

from . import ir, jit, options
from ._args import _int32_host
from ._lib import _torch
from .runner import SplitKVRunner

_LAYOUTS = ("NHD", "HND")


def _check_layout(kv_layout):
    if kv_layout not in _LAYOUTS:
        raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
    return kv_layout


def _check_workspace(buffer):
    """FlashInfer's float_workspace_buffer: FlashIR's runtime sizes its own
    workspace from the capacity, so this is only checked (a CUDA tensor or
    None) and kept."""
    torch = _torch()
    if buffer is not None and (not isinstance(buffer, torch.Tensor) or not buffer.is_cuda):
        raise TypeError("float_workspace_buffer must be a CUDA tensor (or None)")
    return buffer


def _device_int32(name, t):
    torch = _torch()
    if t is None:
        return None
    if not isinstance(t, torch.Tensor) or not t.is_cuda or t.dtype != torch.int32 \
            or t.dim() != 1:
        raise TypeError(f"{name} must be a 1-D int32 CUDA tensor")
    return t


def _indptr(name, t, entries=None):
    """A host int32 indptr checked: 1-D, starting at 0, non-decreasing."""
    host = _int32_host(name, t)
    if host.numel() < 1:
        raise ValueError(f"{name} needs at least one entry")
    if entries is not None and host.numel() != entries:
        raise ValueError(f"{name} needs {entries} entries, got {host.numel()}")
    if int(host[0]) != 0:
        raise ValueError(f"{name} must start at 0, got {int(host[0])}")
    steps = host[1:] - host[:-1]
    if steps.numel() and int(steps.min()) < 0:
        bad = int((steps < 0).nonzero()[0])
        raise ValueError(f"{name} decreases at entry {bad + 1} ({int(host[bad])} -> "
                         f"{int(host[bad + 1])})")
    return host


def _check_o_data_type(o_data_type, q_data_type):
    """FlashInfer's o_data_type: FlashIR's kernels write q's element type."""
    if o_data_type is not None and ir.element_type(o_data_type) != ir.element_type(q_data_type):
        raise ValueError(f"o_data_type ({o_data_type}) must equal q_data_type ({q_data_type}): "
                         f"FlashIR's kernels write the queries' element type")


def _variant_spec(variant, variant_params, shape, kv_layout, sm_scale, q_data_type,
                  kv_data_type, **others):
    """variant_options of plan()'s `variant` (a name or attn IR text); the
    FlashInfer options in `others` (name: (value, default)) must be left at
    their defaults, the variant being the whole attention."""
    set_ = [n for n, (value, default) in others.items() if value != default]
    if set_:
        raise ValueError(f"variant is the whole attention: leave {', '.join(set_)} at "
                         f"the default (or write them into the variant)")
    return options.variant_options(*shape, kv_layout, variant, variant_params, sm_scale,
                                   q_data_type, kv_data_type)


def _pow2_at_least(n, floor):
    return max(floor, 1 << max(0, int(n) - 1).bit_length())


def _kept_on_device(buffer, value, locked, refusal, need=None, size=None):
    """`value` (a tensor) copied to the start of `buffer`, a CUDA tensor kept
    across plans (a CUDA graph's replays read the addresses it captured).
    Where `buffer` is None, of another dtype or shorter than `need` entries
    (default: value's), a new one of `size` entries (default: `need`) --
    unless `locked` (a graph holds it, or the caller gave it): then
    ValueError(refusal(buffer))."""
    torch = _torch()
    need = value.numel() if need is None else need
    if buffer is None or buffer.dtype != value.dtype or buffer.numel() < need:
        if locked and buffer is not None:
            raise ValueError(refusal(buffer))
        buffer = torch.zeros(need if size is None else size, dtype=value.dtype, device="cuda")
    if value.numel():
        buffer[:value.numel()].copy_(value)
    return buffer


class PagedWrapperBase:
    """plan()/run() over a paged KV cache through a JIT-compiled split-KV
    kernel pair (decode or prefill kernels: ``_prefill``)."""

    _prefill = False

    def __init__(self, float_workspace_buffer=None, kv_layout="NHD", use_cuda_graph=False,
                 paged_kv_indices_buffer=None, max_batch_size=None, max_qo_len=None):
        self._workspace = _check_workspace(float_workspace_buffer)
        self._kv_layout = _check_layout(kv_layout)
        self._graph = bool(use_cuda_graph)
        self._indices = _device_int32("paged_kv_indices_buffer", paged_kv_indices_buffer)
        self._fixed_indices = paged_kv_indices_buffer is not None
        for name, value in (("max_batch_size", max_batch_size), ("max_qo_len", max_qo_len)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self._max_batch = max_batch_size
        self._max_qo = max_qo_len
        self._runner = None
        self._runner_key = None
        self._planned = None
        # Device parameter tensors by name, reused across plans (a CUDA
        # graph's replays read the addresses it captured).
        self._param_buffers = {}
        # The last plan()'s JIT: {"cached", "ms", "key"} (jit.compile_bundle).
        self.compile_info = None

    @property
    def is_cuda_graph_enabled(self):
        return self._graph

    # -- plan -----------------------------------------------------------------

    def _capacity(self, batch, max_qo):
        """(requests, rows per request) the runner is sized for: powers of
        two that grow with the steps; fixed by the first plan() (or the
        constructor's sizes) under CUDA graphs, where a step past them is an
        error."""
        if self._graph:
            if self._runner_key is None:
                cap = (self._max_batch or batch, self._max_qo or max_qo)
            else:
                cap = self._runner_key[2:]
            if batch > cap[0]:
                raise ValueError(f"capacity: the step has {batch} requests; this CUDA-graph "
                                 f"wrapper was sized for {cap[0]} (max_batch_size)")
            if max_qo > cap[1]:
                raise ValueError(f"capacity: a request has {max_qo} query rows; this CUDA-graph "
                                 f"wrapper was sized for {cap[1]} (max_qo_len)")
            return cap
        cap = (_pow2_at_least(batch, 16), _pow2_at_least(max_qo, 1))
        if self._runner_key is not None:
            old = self._runner_key[2:]
            if old[0] >= cap[0] and old[1] >= cap[1]:
                return old
        return cap

    # FlashInfer's names of plan()'s page-table arguments.
    _names = ("qo_indptr", "paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len")

    def _plan_paged(self, spec, recipes, qo_indptr, kv_indptr, kv_indices, kv_last_page_len,
                    custom_mask=None, mask_packed=False):
        """Checks the page table, compiles (or finds) the kernels, sizes the
        runner, plans the step and puts the page ids and the variant's
        parameters on the device."""
        torch = _torch()
        qo_name, indptr_name, indices_name, last_name = self._names
        last = _int32_host(last_name, kv_last_page_len)
        batch = last.numel()
        kvp = _indptr(indptr_name, kv_indptr, batch + 1)
        qo = _indptr(qo_name, qo_indptr, batch + 1)
        idx = _int32_host(indices_name, kv_indices)
        pages = int(kvp[-1])
        if idx.numel() < pages:
            raise ValueError(f"{indices_name} has {idx.numel()} entries; {indptr_name} "
                             f"reaches {pages}")
        idx = idx[:pages]
        if pages and int(idx.min()) < 0:
            raise IndexError(f"{indices_name} holds a negative page id ({int(idx.min())})")
        page = spec.page_size
        counts = kvp[1:] - kvp[:-1]
        bad = ((counts > 0) & ((last < 1) | (last > page))) | ((counts == 0) & (last != 0))
        if bool(bad.any()):
            r = int(bad.nonzero()[0])
            raise ValueError(f"{last_name}[{r}] is {int(last[r])}: a request with pages has "
                             f"1..page_size ({page}) keys on its last page, one without 0")
        qo_lens = qo[1:] - qo[:-1]
        kv_lens = torch.where(counts > 0, (counts - 1) * page + last, torch.zeros_like(counts))
        max_qo = int(qo_lens.max()) if batch else 1
        if not self._prefill and max_qo > 1:
            raise ValueError(f"{qo_name}: decode takes one query per request, a request "
                             f"has {max_qo}")

        chip, image = jit.detect_chip()
        folder, self.compile_info = jit.compile_spec(spec, chip, prefill=self._prefill)
        cap = self._capacity(batch, max(1, max_qo))
        key = (folder, image) + tuple(cap)
        if key != self._runner_key:
            self._runner = None  # its workspace goes before the next one's
            self._runner = SplitKVRunner(folder, spec.function_name(), max_requests=cap[0],
                                         max_qo_len=cap[1], chip=image)
            self._runner_key = key
        num_pages = int(idx.max()) + 1 if pages else 1
        self._runner.plan(qo, kvp, idx, last, num_pages)
        self._upload_indices(idx)
        params = self._param_values(spec, recipes, cap[0], qo_lens, kv_lens, custom_mask,
                                    mask_packed)
        self._planned = dict(spec=spec, batch=batch, rows=int(qo[-1]), pages=pages,
                             num_pages=num_pages, params=params)

    def _upload_indices(self, idx):
        n = max(1, idx.numel())
        self._indices = _kept_on_device(
            self._indices, idx, self._fixed_indices or self._graph,
            lambda buffer: f"capacity: paged_kv_indices has {idx.numel()} entries; the "
                           f"CUDA-graph wrapper's page-id buffer holds {buffer.numel()} "
                           f"(paged_kv_indices_buffer)",
            need=n, size=_pow2_at_least(n, 256))

    def _param_values(self, spec, recipes, cap_batch, qo_lens, kv_lens, custom_mask,
                      mask_packed):
        """run()'s parameter values in the variant's order; device tensors
        are kept per plan (fixed addresses for a CUDA graph's replays)."""
        torch = _torch()
        values = []
        for recipe, param in zip(recipes, spec.params):
            if recipe.kind == "scalar":
                values.append(recipe.value)
                continue
            if recipe.kind == "given":  # the caller's value; tensors to the device buffers
                value = recipe.value
                if isinstance(value, torch.Tensor):
                    value = self._device_param(param.name, value.detach().reshape(-1))
                values.append(value)
                continue
            if recipe.kind == "per_request":
                value = torch.full((cap_batch,), recipe.value, dtype=torch.int32)
            elif recipe.kind == "per_head":
                value = torch.tensor(recipe.values, dtype=torch.float32)
            else:  # custom_mask
                value = self._mask_param(param.name, cap_batch, qo_lens, kv_lens, custom_mask,
                                         mask_packed)
            values.append(self._device_param(param.name, value))
        return values

    def _device_param(self, name, value):
        """`value` copied into the device buffer kept for parameter `name`
        (grown where it is too small, except under a CUDA graph)."""
        buffer = _kept_on_device(
            self._param_buffers.get(name), value, self._graph,
            lambda buffer: f"capacity: the variant's parameter {name} needs {value.numel()} "
                           f"entries; the CUDA-graph wrapper's buffer holds {buffer.numel()} "
                           f"(plan the largest step first)")
        self._param_buffers[name] = buffer
        return buffer

    def _mask_param(self, name, cap_batch, qo_lens, kv_lens, mask, packed):
        """custom_mask's bits, row0 and stride: FlashInfer's flattened
        per-request [qo_len, kv_len] masks (bool, or packed little-endian
        bits, each request's padded to a byte) as the variant's bit index
        row0 + qpos * stride + kpos, qpos = i + kv_len - qo_len."""
        torch = _torch()
        sizes = [int(q) * int(k) for q, k in zip(qo_lens, kv_lens)]
        if name == "stride":
            return torch.tensor(list(map(int, kv_lens)) + [0] * (cap_batch - len(sizes)),
                                dtype=torch.int64)
        starts, bit = [], 0
        for size in sizes:
            starts.append(bit)
            bit += ((size + 7) // 8) * 8 if packed else size
        if name == "row0":
            row0 = [s - (int(k) - int(q)) * int(k) for s, q, k in zip(starts, qo_lens, kv_lens)]
            return torch.tensor(row0 + [0] * (cap_batch - len(sizes)), dtype=torch.int64)
        what = "packed_custom_mask" if packed else "custom_mask"
        if not isinstance(mask, torch.Tensor):
            raise TypeError(f"{what} must be a tensor")
        if packed:
            if mask.dtype != torch.uint8 or mask.dim() != 1:
                raise TypeError(f"{what} must be a 1-D uint8 tensor, got {mask.dtype} "
                                f"{list(mask.shape)}")
            if mask.numel() * 8 < bit:
                raise ValueError(f"{what} has {mask.numel()} bytes; the requests' masks need "
                                 f"{bit // 8}")
            bits = mask.to("cuda")
        else:
            if mask.dtype != torch.bool or mask.dim() != 1:
                raise TypeError(f"{what} must be a 1-D bool tensor, got {mask.dtype} "
                                f"{list(mask.shape)}")
            if mask.numel() != bit:
                raise ValueError(f"{what} has {mask.numel()} entries; the requests' "
                                 f"qo_len x kv_len masks hold {bit}")
            flat = torch.zeros(((bit + 7) // 8) * 8, dtype=torch.uint8, device="cuda")
            flat[:bit] = mask.to("cuda", torch.uint8)
            weights = (2 ** torch.arange(8, device="cuda", dtype=torch.int32)).to(torch.uint8)
            bits = (flat.view(-1, 8) * weights).sum(1, dtype=torch.int32).to(torch.uint8)
        if bits.numel() == 0:
            bits = torch.zeros(1, dtype=torch.uint8, device="cuda")
        return bits.contiguous()

    # -- run ------------------------------------------------------------------

    def _pools(self, paged_kv_cache):
        torch = _torch()
        if isinstance(paged_kv_cache, torch.Tensor):
            raise ValueError("paged_kv_cache: FlashIR's kernels read K and V from separate "
                             "contiguous pools; pass (k_cache, v_cache), not one [num_pages, "
                             "2, ...] tensor")
        if not isinstance(paged_kv_cache, (tuple, list)) or len(paged_kv_cache) != 2:
            raise TypeError("paged_kv_cache must be a (k_cache, v_cache) pair")
        return tuple(paged_kv_cache)

    def _run_paged(self, q, k_pool, v_pool, out, lse, return_lse,
                   names=("q", "paged_kv_cache[0]", "paged_kv_cache[1]")):
        torch = _torch()
        if self._planned is None:
            raise RuntimeError("run() before plan()")
        for name, t in zip(names[1:], (k_pool, v_pool)):
            if isinstance(t, torch.Tensor) and t.dim() == 4 and t.shape[0] < \
                    self._planned["num_pages"]:
                raise IndexError(f"{name} holds {t.shape[0]} pages; the planned page ids "
                                 f"reach {self._planned['num_pages'] - 1}")
        o, l = self._runner.run(q, (k_pool, v_pool), self._indices, capacity_grids=self._graph,
                                params=self._planned["params"], names=names)
        if out is not None:
            _check_out("out", out, o)
            out.copy_(o)
            o = out
        if lse is not None:
            _check_out("lse", lse, l)
            lse.copy_(l)
            l = lse
        return (o, l) if return_lse else o


def _check_out(name, given, made):
    torch = _torch()
    if not isinstance(given, torch.Tensor) or given.shape != made.shape \
            or given.dtype != made.dtype or given.device != made.device:
        raise ValueError(f"{name} must be a {made.dtype} tensor of shape {list(made.shape)} on "
                         f"{made.device}")

"""JIT: kernel bundles compiled on first use and kept in an on-disk cache.

``compile_bundle(ir, chip)`` returns the folder of the bundle that
``flashir-bundle`` writes for an attn program (``flashir.ir``) and a chip:
from the cache when a bundle of the same key is there, else compiled into
it. The key covers everything that changes the code: the kernel ABI
version, the compiler (its path, size and modification time), the program
text, the chip and the compiler options. Processes that compile the same
key at once serialize on a lock file; a bundle appears in the cache only
whole (written to a temporary folder, then renamed).

The compiler is ``$FLASHIR_COMPILER``, else the installed package's
(``pip install . -C compiler=PATH``), else this checkout's
``build/jit/flashir-bundle`` (``scripts/build-jit-compiler.sh``: a static
build for machines without LLVM) or ``build/bin/flashir-bundle``, else
``flashir-bundle`` on the PATH. The cache is ``$FLASHIR_CACHE_DIR``, else
``~/.cache/flashir``.

AOT, ahead of serving: ``python -m flashir.jit CONFIG.json`` compiles every
configuration of a JSON list of ``AttentionSpec`` fields (plus ``chip``,
and optionally ``split_kv``, ``prefill`` and ``image``, "cubin" or "ptx";
by default cubins where a ptxas is found) into the cache; plan() then finds
them there.
"""

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import ir as _ir

__all__ = ["ABI_VERSION", "SPLIT_KV_SCHEDULE", "JitError", "chip_for_capability",
           "detect_chip", "find_compiler", "cache_dir", "cache_key", "compile_bundle",
           "IMAGES", "find_ptxas", "spec_options", "compile_spec"]

# The manifest ABI the Python package reads (include/flashir/ABI/KernelABI.h).
ABI_VERSION = 6
# Split-KV kernels and their merge kernels (what the plan/run runtime runs).
SPLIT_KV_SCHEDULE = "attn-import-variants,attn-split-kv{chunk-size=0}"


class JitError(RuntimeError):
    """No compiler, or the compiler refused the program (its diagnostics
    are the message)."""


def chip_for_capability(major, minor):
    """(chip, image) the bundle serves a device of compute capability
    major.minor with: its own cubin where FlashIR targets the chip, else
    the newest older target's PTX for the driver to compile (a newer chip
    than any target; sm_90a's PTX is specific to sm_90)."""
    cap = (int(major), int(minor))
    if cap == (9, 0):
        return "sm_90a", "sm_90a"
    own = {(7, 5): "sm_75", (8, 0): "sm_80", (8, 6): "sm_86", (8, 9): "sm_89"}
    if cap in own:
        return own[cap], own[cap]
    if cap < (7, 5):
        raise JitError(f"compute capability {major}.{minor}: FlashIR needs sm_75 or newer")
    older = max(c for c in own if c <= cap)
    return own[older], own[older] + ":ptx"


def detect_chip(device=None):
    """chip_for_capability of the current (or given) CUDA device."""
    import torch
    major, minor = torch.cuda.get_device_capability(device)
    return chip_for_capability(major, minor)


def _repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_compiler():
    """The flashir-bundle to run (see the module's doc), or JitError."""
    env = os.environ.get("FLASHIR_COMPILER")
    if env:
        if not os.access(env, os.X_OK):
            raise JitError(f"FLASHIR_COMPILER={env} is not an executable")
        return env
    root = _repo_root()
    packaged = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "flashir-bundle")
    for path in (packaged, os.path.join(root, "build", "jit", "flashir-bundle"),
                 os.path.join(root, "build", "bin", "flashir-bundle")):
        if os.access(path, os.X_OK):
            return path
    found = shutil.which("flashir-bundle")
    if found:
        return found
    raise JitError("no FlashIR compiler: set FLASHIR_COMPILER to a flashir-bundle, build this "
                   "checkout (scripts/setup.sh, or scripts/build-jit-compiler.sh for a static "
                   "one), or fill the cache ahead of time (python -m flashir.jit CONFIG.json) "
                   "on a machine that has one")


def cache_dir():
    return os.environ.get("FLASHIR_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "flashir")


def _compiler_identity(compiler):
    st = os.stat(compiler)
    return [os.path.realpath(compiler), st.st_size, st.st_mtime_ns]


def cache_key(program, chip, options=(), compiler=None):
    """The cache key (hex) of `program` (attn IR text) compiled for `chip`
    with `options` (compiler arguments) by `compiler` (None: no compiler
    identity, for looking up bundles built elsewhere)."""
    doc = {"abi": ABI_VERSION, "program": program, "chip": chip, "options": list(options),
           "compiler": _compiler_identity(compiler) if compiler else None}
    text = json.dumps(doc, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _valid_bundle(path):
    try:
        with open(os.path.join(path, "manifest.json")) as f:
            return json.load(f).get("abi_version") == ABI_VERSION
    except (OSError, ValueError):
        return False


def compile_bundle(program, chip, options=(), compiler=None, cache=None):
    """(bundle folder, info) of `program` for `chip`: info has ``cached``
    (found in the cache) and ``ms`` (the call's wall time)."""
    start = time.perf_counter()
    compiler = compiler or find_compiler()
    cache = cache or cache_dir()
    key = cache_key(program, chip, options, compiler)
    final = os.path.join(cache, key)
    if _valid_bundle(final):
        return final, {"cached": True, "ms": (time.perf_counter() - start) * 1e3, "key": key}
    os.makedirs(cache, exist_ok=True)
    with open(final + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cached = _valid_bundle(final)  # another process compiled it meanwhile
        if not cached:
            _compile_into(program, chip, options, compiler, cache, final)
    return final, {"cached": cached, "ms": (time.perf_counter() - start) * 1e3, "key": key}


def _compile_into(program, chip, options, compiler, cache, final):
    work = tempfile.mkdtemp(prefix=".tmp-", dir=cache)
    try:
        source = os.path.join(work, "program.mlir")
        with open(source, "w") as f:
            f.write(program)
        out = os.path.join(work, "bundle")
        cmd = [compiler, source, "-o", out, f"--chips={chip}", *options]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise JitError(f"flashir-bundle failed ({run.returncode}) for {chip}:\n"
                           f"{run.stderr.strip() or run.stdout.strip()}")
        if os.path.isdir(final):  # an invalid leftover (older ABI, torn copy)
            shutil.rmtree(final)
        os.rename(out, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)


IMAGES = ("ptx", "cubin")


def find_ptxas():
    """The ptxas that makes cubins: ``$FLASHIR_PTXAS``, else the CUDA
    toolkit's (``$CUDA_HOME``, ``/usr/local/cuda``), else ``ptxas`` on the
    PATH; None without one."""
    env = os.environ.get("FLASHIR_PTXAS")
    if env:
        if not os.access(env, os.X_OK):
            raise JitError(f"FLASHIR_PTXAS={env} is not an executable")
        return env
    homes = [os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    for home in filter(None, homes):
        path = os.path.join(home, "bin", "ptxas")
        if os.access(path, os.X_OK):
            return path
    return shutil.which("ptxas")


def _image(image):
    """The image to build: `image`, else $FLASHIR_JIT_IMAGE, else cubins
    where a ptxas is found and PTX without one."""
    image = image or os.environ.get("FLASHIR_JIT_IMAGE") or (
        "cubin" if find_ptxas() else "ptx")
    if image not in IMAGES:
        raise JitError(f"FLASHIR_JIT_IMAGE / image must be 'ptx' or 'cubin', got {image!r}")
    return image


def _image_options(image):
    """flashir-bundle's options for `image`: one module per kernel, so the
    kernels compile (LLVM, then ptxas) in parallel."""
    if _image(image) == "ptx":
        return ("--module-per-kernel", "--ptxas=none")
    ptxas = find_ptxas()
    if not ptxas:
        raise JitError("image 'cubin' needs ptxas: install the CUDA toolkit, set CUDA_HOME "
                       "or FLASHIR_PTXAS, or use image 'ptx' (FLASHIR_JIT_IMAGE=ptx)")
    return ("--module-per-kernel", f"--ptxas={ptxas}")


def spec_options(chip, split_kv=True, prefill=False, image=None):
    """flashir-bundle's options for a spec's kernels: with split_kv, its
    split-KV kernels and merge kernels (SPLIT_KV_SCHEDULE); with prefill
    too, tiles chosen for long queries (attn-select-tiles) and the
    tensor-core split-KV prefill kernel (--split-prefill). `image` (default
    $FLASHIR_JIT_IMAGE, else "cubin" where find_ptxas() finds a ptxas, else
    "ptx"): "cubin" runs ptxas on each kernel in parallel; "ptx" writes PTX
    only, which the driver compiles (one kernel after the other) when the
    runtime loads it and keeps in its own cache."""
    if prefill and not split_kv:
        raise ValueError("prefill kernels are split-KV kernels (split_kv=True)")
    extra = _image_options(image)
    if not split_kv:
        return extra
    if not prefill:
        return (f"--schedule={SPLIT_KV_SCHEDULE}",) + extra
    tiles = f"attn-select-tiles{{chip={chip} avg-qo-len=128}}"
    return (f"--schedule={SPLIT_KV_SCHEDULE},{tiles}", "--split-prefill") + extra


# Bundles this process found or compiled, by compile_spec's arguments: a
# wrapper re-planned every step (transformers) skips the program text, the
# hash and the candidates' lookups (a bundle torn meanwhile compiles again).
_found = {}


def compile_spec(spec, chip, split_kv=True, compiler=None, cache=None, prefill=False,
                 image=None):
    """compile_bundle of an AttentionSpec's program with spec_options.
    Without an `image`, a bundle already in the cache serves (cubins
    first, e.g. the AOT command's); else it compiles the default image."""
    start = time.perf_counter()
    compiler = compiler or find_compiler()
    cache = cache or cache_dir()
    memo = (spec, chip, split_kv, prefill, image or os.environ.get("FLASHIR_JIT_IMAGE"),
            compiler, cache)
    if memo in _found and _valid_bundle(_found[memo][0]):
        folder, key = _found[memo]
        return folder, {"cached": True, "ms": (time.perf_counter() - start) * 1e3, "key": key}
    folder, info = _compile_spec(spec, chip, split_kv, compiler, cache, prefill, image, start)
    _found[memo] = (folder, info["key"])
    return folder, info


def _compile_spec(spec, chip, split_kv, compiler, cache, prefill, image, start):
    program = _ir.attention_module(spec)
    if image is None:
        for candidate in ("cubin", "ptx") if find_ptxas() else ("ptx",):
            options = spec_options(chip, split_kv, prefill, candidate)
            key = cache_key(program, chip, options, compiler)
            folder = os.path.join(cache, key)
            if _valid_bundle(folder):
                return folder, {"cached": True, "ms": (time.perf_counter() - start) * 1e3,
                                "key": key}
    return compile_bundle(program, chip, spec_options(chip, split_kv, prefill, image),
                          compiler, cache)


def _aot(path):
    with open(path) as f:
        configs = json.load(f)
    for config in configs:
        config = dict(config)
        chip = config.pop("chip")
        split = config.pop("split_kv", True)
        prefill = config.pop("prefill", False)
        image = config.pop("image", None)
        spec = _ir.AttentionSpec(**config)
        folder, info = compile_spec(spec, chip, split, prefill=prefill, image=image)
        state = "cached" if info["cached"] else f"compiled in {info['ms']:.0f} ms"
        print(f"{spec.function_name()} {chip}: {state} -> {folder}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m flashir.jit CONFIG.json  (a JSON list of AttentionSpec "
                 "fields, each with a 'chip')")
    _aot(sys.argv[1])

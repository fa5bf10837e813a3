"""Loading libflashir_c.so (the C API) and turning its status codes into
Python exceptions."""

import ctypes
import os

__all__ = ["FlashIRError"]


class FlashIRError(RuntimeError):
    """A failure reported by the runtime (CUDA driver, bundle, capacity)."""


class Param(ctypes.Structure):
    """FlashIRParam (include/flashir-c/Runtime.h)."""
    _fields_ = [("pointer", ctypes.c_void_p), ("size", ctypes.c_int64),
                ("scalar", ctypes.c_float), ("integer", ctypes.c_int64)]


_STATUS = {1: ValueError, 2: IndexError, 3: FlashIRError}
_lib = None


def _library():
    global _lib
    if _lib is not None:
        return _lib
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    # $FLASHIR_LIB, the installed package's copy (pip install .), this
    # checkout's builds.
    candidates = [os.environ.get("FLASHIR_LIB", ""),
                  os.path.join(here, "lib", "libflashir_c.so")] + [
        os.path.join(root, d, "lib", "CAPI", "libflashir_c.so")
        for d in ("build", "build-runtime")]
    for path in candidates:
        if path and os.path.exists(path):
            lib = ctypes.CDLL(path)
            break
    else:
        raise FlashIRError("libflashir_c.so not found (build the runtime, or set "
                           "FLASHIR_LIB); looked in " + ", ".join(c for c in candidates if c))
    i64, vp, i32p = ctypes.c_int64, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32)
    lib.flashirLastError.restype = ctypes.c_char_p
    lib.flashirSplitKVCreate.argtypes = [ctypes.c_char_p] * 4 + [i64] * 4 + [ctypes.POINTER(vp)]
    lib.flashirSplitKVShape.argtypes = [vp] + [ctypes.POINTER(i64)] * 4
    lib.flashirSplitKVPlan.argtypes = [vp, i32p, i32p, i32p, i32p, i64, i64, vp,
                                      ctypes.POINTER(i64)]
    lib.flashirSplitKVRun.argtypes = [vp, vp, vp, vp, i64, vp, i64, vp, vp, vp, ctypes.c_int]
    lib.flashirSplitKVRunWithParams.argtypes = [vp, vp, vp, vp, i64, vp, i64, vp, vp,
                                                ctypes.POINTER(Param), i64, vp, ctypes.c_int]
    lib.flashirSplitKVDestroy.argtypes = [vp]
    lib.flashirSplitKVDestroy.restype = None
    lib.flashirCascadeCreate.argtypes = [ctypes.c_char_p] * 6 + [i64] * 2 + [ctypes.POINTER(vp)]
    lib.flashirCascadeCreateWithChunks.argtypes = ([ctypes.c_char_p] * 6 + [i64] * 5
                                                   + [ctypes.POINTER(vp)])
    lib.flashirCascadeShape.argtypes = [vp] + [ctypes.POINTER(i64)] * 5
    lib.flashirCascadePlannedChunks.argtypes = [vp, ctypes.POINTER(i64)]
    lib.flashirCascadePlannedSuffixChunks.argtypes = [vp, ctypes.POINTER(i64)]
    lib.flashirCascadePlan.argtypes = [vp, i32p, i64, i64, i32p, i32p, i32p, i64, i64, vp]
    lib.flashirCascadeRun.argtypes = [vp, vp, vp, vp, i64, vp, i64, vp, i64, vp, vp, vp,
                                      ctypes.c_int]
    lib.flashirCascadeRunWithParams.argtypes = [vp, vp, vp, vp, i64, vp, i64, vp, i64, vp,
                                                vp, ctypes.POINTER(Param), i64, vp,
                                                ctypes.c_int]
    lib.flashirCascadeDestroy.argtypes = [vp]
    lib.flashirCascadeDestroy.restype = None
    lib.flashirMergeCreate.argtypes = [ctypes.c_char_p] * 3 + [ctypes.POINTER(vp)]
    lib.flashirMergeShape.argtypes = [vp] + [ctypes.POINTER(i64)] * 2
    lib.flashirMergeRun.argtypes = [vp] * 7 + [i64, i64, vp]
    lib.flashirMergeDestroy.argtypes = [vp]
    lib.flashirMergeDestroy.restype = None
    _lib = lib
    return lib


def _on_current_device():
    """Makes PyTorch's current device's context current on this thread:
    the C API's handles live on the device whose context is current when
    they are created (a tensor-parallel rank's, not device 0)."""
    _torch().cuda.synchronize()


def _check(rc):
    if rc != 0:
        message = _library().flashirLastError().decode()
        raise _STATUS.get(rc, FlashIRError)(message)


def _torch():
    import torch
    return torch

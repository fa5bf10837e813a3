"""Probe (issue 24, cold first plan()): does the driver compile the PTX of
two kernels faster as two modules loaded from two threads than as one
module? Each load runs in a fresh process with the driver's PTX cache off.

    python3 bench/gpu/probes/ptx_load_parallel.py BUNDLE_PTX OUT.json
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import threading
import time


def split(ptx):
    """The module header and one self-contained text per .entry (probe
    only: kernels that share .func helpers would need them copied)."""
    starts = [m.start() for m in re.finditer(r"^\.visible \.entry ", ptx, re.M)]
    header = ptx[:starts[0]]
    bounds = starts[1:] + [len(ptx)]
    return [header + ptx[s:e] for s, e in zip(starts, bounds)]


def load(images, threads):
    cuda = ctypes.CDLL("libcuda.so.1")
    assert cuda.cuInit(0) == 0
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    times = {}

    def one(i, image):
        assert cuda.cuCtxSetCurrent(ctx) == 0
        mod = ctypes.c_void_p()
        t = time.perf_counter()
        rc = cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image.encode() + b"\0"))
        times[i] = ((time.perf_counter() - t) * 1e3, rc)

    start = time.perf_counter()
    if threads:
        ts = [threading.Thread(target=one, args=(i, im)) for i, im in enumerate(images)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    else:
        for i, im in enumerate(images):
            one(i, im)
    return {"wall_ms": (time.perf_counter() - start) * 1e3, "each": times}


def main():
    if sys.argv[1] == "--child":
        images = json.loads(open(sys.argv[2]).read())
        print(json.dumps(load(images, sys.argv[3] == "1")))
        return
    ptx, out = sys.argv[1], sys.argv[2]
    text = open(ptx).read()
    parts = split(text)
    cases = {"one_module": ([text], False), "separate_sequential": (parts, False),
             "separate_threads": (parts, True)}
    env = dict(os.environ, CUDA_CACHE_DISABLE="1")
    result = {"ptx": ptx, "kernels": len(parts)}
    for name, (images, threads) in cases.items():
        path = f"/tmp/probe-{name}.json"
        json.dump(images, open(path, "w"))
        runs = []
        for _ in range(3):
            r = subprocess.run([sys.executable, __file__, "--child", path, str(int(threads))],
                               env=env, capture_output=True, text=True)
            runs.append(json.loads(r.stdout) if r.returncode == 0 else r.stderr[-500:])
        result[name] = runs
        print(name, runs)
    for lazy in ("LAZY", "EAGER"):
        r = subprocess.run([sys.executable, __file__, "--child", "/tmp/probe-one_module.json",
                            "0"], env=dict(env, CUDA_MODULE_LOADING=lazy),
                           capture_output=True, text=True)
        result[f"one_module_{lazy}"] = r.stdout or r.stderr[-500:]
    json.dump(result, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()

"""Probe (issue 24, cold first plan()): ptxas (the CUDA toolkit's and
Triton's bundled one) on a bundle's PTX as one file, per kernel in sequence
and per kernel as parallel processes; and loading the cubins.

    python3 bench/gpu/probes/ptxas_parallel.py BUNDLE_PTX OUT.json
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptx_load_parallel import split  # noqa: E402


def ptxas_paths():
    found = {"toolkit": "/usr/local/cuda/bin/ptxas"}
    try:
        import triton
        root = os.path.dirname(triton.__file__)
        for p in glob.glob(os.path.join(root, "backends", "nvidia", "bin", "ptxas*")):
            found["triton:" + os.path.basename(p)] = p
    except ImportError:
        pass
    return {k: v for k, v in found.items() if os.access(v, os.X_OK)}


def run(ptxas, files, parallel):
    start = time.perf_counter()
    procs = []
    for f in files:
        cmd = [ptxas, "-arch=sm_90a", "-O3", f, "-o", f + ".cubin"]
        if parallel:
            procs.append(subprocess.Popen(cmd))
        else:
            subprocess.run(cmd, check=True)
    for p in procs:
        assert p.wait() == 0
    return (time.perf_counter() - start) * 1e3


def main():
    ptx, out = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp()
    text = open(ptx).read()
    whole = os.path.join(work, "whole.ptx")
    open(whole, "w").write(text)
    parts = []
    for i, p in enumerate(split(text)):
        parts.append(os.path.join(work, f"k{i}.ptx"))
        open(parts[-1], "w").write(p)
    result = {"ptx": ptx}
    for name, path in ptxas_paths().items():
        version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        row = {"version": version.strip().splitlines()[-1]}
        for case, (files, par) in {"whole": ([whole], False), "seq": (parts, False),
                                   "parallel": (parts, True)}.items():
            row[case] = [run(path, files, par) for _ in range(3)]
        row["each"] = [[run(path, [f], False) for _ in range(2)] for f in parts]
        result[name] = row
        print(name, row)
    json.dump(result, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()

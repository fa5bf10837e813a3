"""Kernel time of the JIT's two images, one process: the same decode and
prefill configurations compiled to cubins by ptxas and to PTX that the
driver compiles at load (FLASHIR_JIT_IMAGE=ptx), each run through
flashir.runner.SplitKVRunner (median of 30 timed runs, CUDA events).

    python3 bench/gpu/probes/jit_image_parity.py --out OUT
"""
import argparse
import json
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "python"))
from flashir import ir, jit  # noqa: E402
from flashir.runner import SplitKVRunner  # noqa: E402

HQ, HKV, D, PAGE = 32, 8, 128, 16


def step(batch, qo_len, kv_len, gen):
    pages = (kv_len + PAGE - 1) // PAGE
    pool = batch * pages
    perm = torch.randperm(pool, generator=gen).to(torch.int32)
    kv_indptr = torch.arange(batch + 1, dtype=torch.int32) * pages
    last = torch.full((batch,), kv_len - (pages - 1) * PAGE, dtype=torch.int32)
    qo = torch.arange(batch + 1, dtype=torch.int32) * qo_len
    k = torch.randn(pool, PAGE, HKV, D, generator=gen).to("cuda", torch.bfloat16)
    v = torch.randn(pool, PAGE, HKV, D, generator=gen).to("cuda", torch.bfloat16)
    q = torch.randn(batch * qo_len, HQ, D, generator=gen).to("cuda", torch.bfloat16)
    return dict(qo=qo, kvp=kv_indptr, idx=perm, last=last, k=k, v=v, q=q, pool=pool,
                batch=batch, qo_len=qo_len)


def time_runner(folder, spec, image, s):
    runner = SplitKVRunner(folder, spec.function_name(), max_requests=s["batch"],
                           max_qo_len=s["qo_len"], chip=image)
    runner.plan(s["qo"], s["kvp"], s["idx"], s["last"], s["pool"])
    idx = s["idx"].cuda()
    out = None
    for _ in range(5):
        out, _ = runner.run(s["q"], (s["k"], s["v"]), idx)
    times = []
    for _ in range(30):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        runner.run(s["q"], (s["k"], s["v"]), idx)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2], out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    os.environ["FLASHIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="flashir-cache-")
    chip, image = jit.detect_chip()
    gen = torch.Generator().manual_seed(5)
    rows = {"device": torch.cuda.get_device_name()}
    for name, variant, prefill, shape in (("decode_b64_l4096", "plain", False, (64, 1, 4096)),
                                          ("prefill_b4_s2048_causal", "causal", True,
                                           (4, 2048, 2048))):
        spec = ir.AttentionSpec(HQ, HKV, D, PAGE, dtype="bf16", variant=variant)
        s = step(*shape, gen)
        row = {}
        outs = {}
        for mode in ("cubin", "ptx"):
            os.environ["FLASHIR_JIT_IMAGE"] = mode
            folder, _ = jit.compile_spec(spec, chip, prefill=prefill)
            row[mode + "_ms"], outs[mode] = time_runner(folder, spec, image, s)
        row["ptx_over_cubin"] = row["ptx_ms"] / row["cubin_ms"]
        row["outputs_equal"] = bool(torch.equal(outs["cubin"], outs["ptx"]))
        rows[name] = row
        print(name, json.dumps(row), flush=True)
    with open(os.path.join(args.out, "jit_image_parity.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

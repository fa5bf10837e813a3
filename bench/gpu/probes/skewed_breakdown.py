"""Issue 6 probe: where the skewed batch's time goes. For several planner
CTA counts, the plan's chunks, run() time and each kernel's duration
(torch.profiler). Run after calibrate.py on the GPU machine:
    python3 bench/gpu/probes/skewed_breakdown.py build-gpu/bundle-split
"""
import json, sys, torch
sys.path.insert(0, "bench/gpu")
sys.path.insert(0, "python")
import flashir
import gpu_check as gc
import skewed_bench

bundle = sys.argv[1]
HKV, D = 8, 128
lens = [32768] + [512] * 63
b = skewed_bench.paged_decode_batch(lens, torch.Generator().manual_seed(7))
kp, vp, q, num_pages = b["kp"], b["vp"], b["q"], b["num_pages"]
idx_gpu = b["indices"].cuda()
real = sum(lens) * HKV * D * 4
for ctas in [None] + [int(a) for a in sys.argv[2:]]:
    w = flashir.SplitKVRunner(bundle, "plain_h32_p16", max_requests=64,
                                                   num_ctas=ctas, max_chunks=4096)
    info = w.plan(b["qo"], b["indptr"], b["indices"], b["last"], num_pages)
    fn = lambda: w.run(q, (kp, vp), idx_gpu)
    fn()
    ms = gc.time_ms(fn, reps=30, warmup=5)
    # Each kernel launches once per run: time per call = time per launch.
    kern = gc.kernel_times(fn)
    print(json.dumps({"num_ctas": ctas, "chunks": info["chunks"], "run_ms": ms,
                      "TBps": real / ms / 1e9, "kernel_us": kern}), flush=True)

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

bundle = sys.argv[1]
HQ, HKV, D, PAGE = 32, 8, 128, 16
lens = [32768] + [512] * 63
gen = torch.Generator().manual_seed(7)
pages_per = [(n + PAGE - 1) // PAGE for n in lens]
num_pages = sum(pages_per) + 8
perm = torch.randperm(num_pages, generator=gen).tolist()
indptr, indices, last = [0], [], []
for n, p in zip(lens, pages_per):
    indices += perm[len(indices):len(indices) + p]
    indptr.append(len(indices))
    last.append(n - (p - 1) * PAGE)
i32 = lambda x: torch.tensor(x, dtype=torch.int32)
kp = torch.randn(num_pages, PAGE, HKV, D, generator=gen).cuda().bfloat16()
vp = torch.randn(num_pages, PAGE, HKV, D, generator=gen).cuda().bfloat16()
q = torch.randn(len(lens), HQ, D, generator=gen).cuda().bfloat16()
qo = i32(list(range(len(lens) + 1)))
idx_gpu = i32(indices).cuda()
real = sum(lens) * HKV * D * 4
for ctas in [None] + [int(a) for a in sys.argv[2:]]:
    w = flashir.BatchDecodeWithPagedKVCacheWrapper(bundle, "plain_h32_p16", max_requests=64,
                                                   num_ctas=ctas, max_chunks=4096)
    info = w.plan(qo, i32(indptr), i32(indices), i32(last), num_pages)
    fn = lambda: w.run(q, (kp, vp), idx_gpu)
    fn()
    ms = gc.time_ms(fn, reps=30, warmup=5)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    kern = {}
    for e in prof.key_averages():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            kern[e.key[:60]] = round(e.device_time_total / e.count, 2) if e.count else 0
    print(json.dumps({"num_ctas": ctas, "chunks": info["chunks"], "run_ms": ms,
                      "TBps": real / ms / 1e9, "kernel_us": kern}), flush=True)

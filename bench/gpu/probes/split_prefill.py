"""Issue 7 probe: split-KV prefill through plan/run (the Python package's
prefill wrapper over a --split-prefill bundle) next to the unsplit prefill
kernel, for long-KV / few-query steps where one CTA per (q tile, head)
leaves the GPU idle. bf16, Hq 32 / Hkv 8, d 128, page 16, non-causal.
    python3 bench/gpu/probes/split_prefill.py build-gpu/bundle-prefill build-gpu/bundle-prefill-split
"""
import json, os, sys, torch
sys.path.insert(0, "bench/gpu")
sys.path.insert(0, "python")
import flashir
import gpu_check as gc

plain_dir, split_dir = sys.argv[1], sys.argv[2]
func = "plain_d128_g4_p16_bf16"
m = json.load(open(os.path.join(plain_dir, "manifest.json")))
cubin = [t for t in m["targets"] if t["chip"] == "sm_90a"][0]["cubin"]
kernels = gc.load_kernels(m, gc.Module(open(os.path.join(plain_dir, cubin), "rb").read()), "sm_90a")
k = [kk for n, kk in kernels.items() if n.rsplit("_", 2)[0] == func][0]
rows = []
for qo_lens, kv_lens in (([128], [32768]), ([128] * 4, [16384] * 4), ([512] * 2, [8192] * 2),
                         ([4096] * 2, [4096] * 2)):
    gen = torch.Generator().manual_seed(3)
    batch = gc.make_batch(k, qo_lens, kv_lens, gen, shared_pages=False)
    out, lse, call = gc.run_kernel(k, batch)
    plain_ms = gc.time_ms(call, reps=20)
    w = flashir.SplitKVRunner(split_dir, func, max_requests=len(qo_lens),
                                                    max_qo_len=max(qo_lens))
    cpu = lambda t: t.cpu()
    info = w.plan(cpu(batch["qo"]), cpu(batch["indptr"]), cpu(batch["indices"]), cpu(batch["last"]),
                  batch["kp"].shape[0])
    fn = lambda: w.run(batch["q"], (batch["kp"], batch["vp"]), batch["indices"])
    o2, l2 = fn()
    split_ms = gc.time_ms(fn, reps=20)
    n = sum(qo_lens)
    flops = sum(4 * q * kv * k.hq * k.d for q, kv in zip(qo_lens, kv_lens))
    row = {"qo": qo_lens[0], "kv": kv_lens[0], "B": len(qo_lens), "chunks": info["chunks"],
           "unsplit_ms": plain_ms, "unsplit_TFLOPs": flops / plain_ms / 1e9,
           "split_planned_ms": split_ms, "split_TFLOPs": flops / split_ms / 1e9,
           "speedup": plain_ms / split_ms,
           "split_vs_unsplit_rel": ((o2[:n].float() - out.float()).norm() / out.float().norm()).item()}
    rows.append(row)
    print(json.dumps(row), flush=True)

import json, os, sys, torch
sys.path.insert(0, "bench/gpu")
import gpu_check as gc
path = "build-gpu/bundle"
m = json.load(open(os.path.join(path, "manifest.json")))
cubin = [t for t in m["targets"] if t["chip"] == "sm_90a"][0]["cubin"]
kernels = gc.load_kernels(m, gc.Module(open(os.path.join(path, cubin), "rb").read()), "sm_90a")
for name, b, l in (("plain_h32_p16_decode_0", 64, 4096), ("plain_h32_p16_decode_0", 128, 2048), ("plain_h64_p16_decode_4", 64, 8192)):
    if name not in kernels:
        name = [n for n in kernels if n.startswith(name.rsplit("_", 1)[0])][0]
    k = kernels[name]
    gen = torch.Generator().manual_seed(11)
    batch = gc.make_batch(k, [1] * b, [l] * b, gen, shared_pages=False)
    for promo in (2, 0, 1, 3, 2):
        gc.L2_PROMOTION = promo
        out, lse, call = gc.run_kernel(k, batch)
        ms = gc.time_ms(call)
        print(json.dumps({"kernel": name, "B": b, "L": l, "l2_promotion": promo, "ms": ms, "TBps": b * l * k.hkv * k.d * 4 / ms / 1e9}))

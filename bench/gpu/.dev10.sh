set -u
nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B build-runtime -G Ninja -DFLASHIR_ENABLE_COMPILER=OFF -DFLASHIR_ENABLE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-runtime --target flashir_c >$OUT/runtime_build.log 2>&1 || echo runtime build failed
mkdir -p $OUT/cascade $OUT/rows
timeout 200 python3 bench/gpu/shared_prefix_bench.py --decode-bundle build-gpu/cascade-decode --prefill-bundle build-gpu/cascade-prefill-wgmma --prefill-split-bundle build-gpu/cpR-split --prefix-chunks 8 --out $OUT/cascade > $OUT/cascade.log 2>&1
python3 - $OUT/cascade/shared_prefix.json <<'PY' || tail -5 $OUT/cascade.log
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    keys = ["not_composed_ms", "composed_kernels_prefix_ms", "composed_kernels_suffix_ms", "composed_kernels_merge_ms", "composed_chain_pdl_ms", "runtime_ms", "runtime_graph_ms", "composed_ms", "speedup", "runtime_rel_err"]
    print(r["case"], {k: (round(r[k], 5) if isinstance(r[k], float) else r[k]) for k in keys if k in r})
PY
timeout 330 python3 bench/gpu/prefill_bench.py --bundle build-gpu/rkb2 --out $OUT/rows --no-flex --only '^((plain|causal)_d(64|128|256)_g4_p(16|4096)_bf16|plain_d128_g4_p16_f16|(plain|causal)_d128_g4_p1_bf16)$' > $OUT/rows.log 2>&1
python3 - $OUT/rows/prefill_bench.json <<'PY' || tail -5 $OUT/rows.log
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    t = {k: v for k, v in r.items() if k.endswith("TFLOPs")}
    a = t.get("flashir_sm_90a cubin_TFLOPs")
    if a: print(r["kernel"], r["case"], "flashir %.1f cudnn %.1f fa2 %.1f ratio %.3f" % (a, t.get("sdpa_cudnn_TFLOPs", 0), t.get("sdpa_fa2_TFLOPs", 0), a / t.get("sdpa_cudnn_TFLOPs", 1)))
PY

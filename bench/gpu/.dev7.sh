set -u
cmake -S . -B build-runtime -G Ninja -DFLASHIR_ENABLE_COMPILER=OFF -DFLASHIR_ENABLE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build-runtime --target flashir_c >$OUT/runtime_build.log 2>&1 || echo runtime build failed
for v in B C B2 C2; do
  ps=build-gpu/cp${v:0:1}-split
  mkdir -p $OUT/cascade-$v
  timeout 200 python3 bench/gpu/shared_prefix_bench.py --decode-bundle build-gpu/cascade-decode --prefill-bundle build-gpu/cascade-prefill-wgmma --prefill-split-bundle $ps --prefix-chunks 8 --out $OUT/cascade-$v > $OUT/cascade-$v.log 2>&1
  python3 - $OUT/cascade-$v/shared_prefix.json <<'PY' || tail -5 $OUT/cascade-$v.log
import json, sys
for r in json.load(open(sys.argv[1]))["rows"][:1]:
    keys = ["not_composed_ms", "composed_kernels_prefix_ms", "composed_kernels_suffix_ms", "composed_kernels_merge_ms", "composed_chain_ms", "composed_chain_pdl_ms", "composed_overlap_ms", "runtime_ms", "composed_ms", "speedup", "runtime_rel_err", "runtime_kernel_us"]
    print(r["case"], {k: (round(r[k], 5) if isinstance(r[k], float) else r[k]) for k in keys if k in r})
PY
done

#!/usr/bin/env bash
# Runs on the GPU machine (no LLVM/MLIR there): checks FlashIR's decode
# kernels against a float64 reference (native sm_90a cubin, sm_80 and sm_75
# PTX through the driver JIT), runs compute-sanitizer memcheck and racecheck
# on a small case, and benchmarks next to SDPA (cuDNN, FA2) and
# FlexAttention. The bundle is compiled beforehand on the build machine:
#   scripts/gpu-bundle.sh        (writes build-gpu/bundle, build-gpu/bundle-split)
# then, on the GPU machine, from the repository root:
#   bench/gpu/gpu_check.sh build-gpu/bundle $OUT [build-gpu/bundle-split [build-gpu/bundle-prefill]]
# FLASHIR_SWEEP="build-gpu/sweep/*" also times the sweep bundles;
# FLASHIR_NCU=1 adds an Nsight Compute profile of the decode kernel and
# cuDNN's (ncu-detail.txt).
set -uo pipefail
bundle=${1:-build-gpu/bundle}
out=${2:-${OUT:-.}}
split=${3:-}
prefill=${4:-}
export PYTHONUNBUFFERED=1
# The C++ runtime (built here without LLVM) launching the bundle directly.
cmake -S . -B build-runtime -G Ninja -DFLASHIR_ENABLE_COMPILER=OFF \
  -DFLASHIR_ENABLE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build build-runtime >/dev/null || echo "runtime build failed"
for chip in sm_90a sm_80:ptx sm_75:ptx; do
  build-runtime/bench/gpu/flashir-decode-check "$bundle" $chip | tee -a "$out/decode_launch.log" | tail -1
done
if [ -n "$split" ]; then
  # plan/run through the C++ runtime: eager vs float64, CUDA graph replays,
  # latency, planned vs unplanned.
  cmake --build build-runtime --target flashir-split-check >/dev/null &&
    build-runtime/bench/gpu/flashir-split-check "$split" "$bundle" | tee "$out/split_check.log" | tail -6
fi
if [ -n "$split" ]; then
  # The Python package over the C API (pytest, or the script's own runner).
  cmake --build build-runtime --target flashir_c >/dev/null &&
    FLASHIR_BUNDLE_SPLIT="$split" python3 -m pytest -q python/tests 2>&1 |
    tee "$out/python_tests.log" | tail -3
fi
if [ -n "$split" ]; then
  # The planner's cost model for the split kernel, into the bundle's manifest
  # (plan/run above used the defaults; the skewed benchmark below uses it).
  python3 bench/gpu/calibrate.py --bundle "$split" --out "$out" 2>&1 |
    tee "$out/calibrate.log" | tail -1
  # Skewed batches next to SDPA-cuDNN (padded + mask) and FlexAttention.
  python3 bench/gpu/skewed_bench.py --bundle "$split" --out "$out" 2>&1 |
    tee "$out/skewed.log" | tail -2
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
python3 bench/gpu/gpu_check.py --bundle "$bundle" --out "$out" ${split:+--split-bundle "$split"} ${FLASHIR_SWEEP:+--sweep $FLASHIR_SWEEP} 2>&1 | tee "$out/gpu_check.log"
status=${PIPESTATUS[0]}
if [ -n "$prefill" ]; then
  # Prefill kernels (issue 7): checks, sanitizers, benchmarks.
  # (The Python tests ran above.)
  bench/gpu/prefill_check.sh "$prefill" "$out" "$bundle" checks split sanitize bench prefix ||
    status=1
fi
if [ -n "${FLASHIR_NCU:-}" ] && command -v ncu >/dev/null; then
  # Where the decode kernel's bandwidth goes next to cuDNN's (one launch
  # each): L2 tables by operation and source unit, warp stalls by PTX line.
  ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section WarpStateStats \
    --section SourceCounters -k 'regex:plain_h32_p16|cudnn' -c 2 \
    python3 bench/gpu/profile_decode.py --bundle "$bundle" --kernels plain_h32_p16_decode_0 \
    --reps 1 > "$out/ncu-detail.txt" 2>&1
  grep -E "Duration|DRAM Throughput|L2 Hit Rate" "$out/ncu-detail.txt"
fi
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 3 \
      python3 bench/gpu/gpu_check.py --bundle "$bundle" --out /tmp --small ${split:+--split-bundle "$split"} \
      > "$out/sanitizer-$tool.log" 2>&1
    rc=$?
    echo "compute-sanitizer $tool: exit $rc, $(grep -c 'ERROR SUMMARY: 0 errors' "$out/sanitizer-$tool.log") clean summaries"
    tail -2 "$out/sanitizer-$tool.log"
  done
fi
exit $status

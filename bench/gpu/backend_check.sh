#!/usr/bin/env bash
# Runs on the GPU machine, in one device call: the checks of the GPU
# backend's rework (issue 23) over the bundles of scripts/gpu-bundle.sh --
# the C++ launcher's float64 checks on the sm_90a cubin and the sm_80 / sm_75
# PTX, plan/run of the split runner, the Python tests, gpu_check.py's
# float64 checks and decode benchmark (SDPA cuDNN/FA2, FlexAttention in the
# same process; NHD vs HND), the prefill kernels' float64 checks on sm_90a,
# and compute-sanitizer memcheck + racecheck on small cases.
#   bench/gpu/backend_check.sh OUT
set -uo pipefail
out=${1:-${OUT:-.}}
export PYTHONUNBUFFERED=1
status=0
cmake -S . -B build-runtime -G Ninja -DFLASHIR_ENABLE_COMPILER=OFF \
  -DFLASHIR_ENABLE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build build-runtime >/dev/null || { echo "runtime build failed"; exit 1; }
for chip in sm_90a sm_80:ptx sm_75:ptx; do
  build-runtime/bench/gpu/flashir-decode-check build-gpu/bundle $chip \
    >>"$out/decode_launch.log" 2>&1 || status=1
  tail -1 "$out/decode_launch.log"
done
build-runtime/bench/gpu/flashir-split-check build-gpu/bundle-split build-gpu/bundle \
  >"$out/split_check.log" 2>&1 || status=1
tail -3 "$out/split_check.log"
FLASHIR_BUNDLE_SPLIT=build-gpu/bundle-split python3 -m pytest -q python/tests \
  >"$out/python_tests.log" 2>&1 || status=1
tail -1 "$out/python_tests.log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
python3 bench/gpu/gpu_check.py --bundle build-gpu/bundle --split-bundle build-gpu/bundle-split \
  --out "$out" >"$out/gpu_check.log" 2>&1 || status=1
echo "decode checks: $(grep -c '^PASS' "$out/gpu_check.log") PASS, $(grep -c '^FAIL' "$out/gpu_check.log") FAIL"
grep '^FAIL' "$out/gpu_check.log" | head -5
python3 bench/gpu/gpu_check.py --bundle build-gpu/bundle-prefill --no-bench --images sm_90a \
  --out /tmp >"$out/prefill_check.log" 2>&1 || status=1
echo "prefill checks: $(grep -c '^PASS' "$out/prefill_check.log") PASS, $(grep -c '^FAIL' "$out/prefill_check.log") FAIL"
grep '^FAIL' "$out/prefill_check.log" | head -5
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --error-exitcode 3 python3 bench/gpu/gpu_check.py \
    --bundle build-gpu/bundle --split-bundle build-gpu/bundle-split --out /tmp --small \
    >"$out/sanitizer-$tool.log" 2>&1 || status=1
  echo "$tool: $(grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" "$out/sanitizer-$tool.log") clean summaries"
done
exit $status

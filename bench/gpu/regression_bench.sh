#!/usr/bin/env bash
# Runs on the GPU machine, in one device call: the benchmarks of issue 23's
# no-regression goal, each next to its peers in one process -- decode (SDPA
# cuDNN / FA2, FlexAttention), prefill d64/d128/d256 causal and not (SDPA
# FA2 / cuDNN), the skewed split-KV batch and shared-prefix decoding -- over
# the bundles of scripts/gpu-bundle.sh (carry bundle, bundle-prefill,
# bundle-split, bundle-split-w1, bundle-w2, bundle-prefill-split).
#   bench/gpu/regression_bench.sh OUT ["STEP ..."]  (decode prefill skewed prefix)
set -uo pipefail
out=${1:-${OUT:-.}}
export PYTHONUNBUFFERED=1
status=0
run() {
  local log=$1
  shift
  timeout 200 "$@" >"$out/$log" 2>&1 || status=1
  echo "== $log"
  tail -12 "$out/$log"
}
# The C API library the runtime-driven benchmarks (skewed, shared prefix) load.
cmake -S . -B build-runtime -G Ninja -DFLASHIR_ENABLE_COMPILER=OFF \
  -DFLASHIR_ENABLE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build build-runtime >/dev/null || { echo "runtime build failed"; exit 1; }
steps=${2:-decode prefill skewed prefix}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
has() { [[ " $steps " == *" $1 "* ]]; }
has decode && run decode_bench.log python3 bench/gpu/gpu_check.py --bundle build-gpu/bundle --bench-only \
  --images sm_90a --out "$out"
has prefill && run prefill_bench.log python3 bench/gpu/prefill_bench.py --bundle build-gpu/bundle-prefill \
  --no-flex --shapes 4x4096 --only '^(plain|causal)_d(64|128|256)_g4_p16_bf16$' --out "$out"
has skewed && run skewed_bench.log python3 bench/gpu/skewed_bench.py --bundle build-gpu/bundle-split --out "$out"
has prefix && run shared_prefix_bench.log python3 bench/gpu/shared_prefix_bench.py --decode-bundle build-gpu/bundle \
  --prefill-bundle build-gpu/bundle-prefill --out "$out"
exit $status

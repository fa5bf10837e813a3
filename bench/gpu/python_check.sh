#!/usr/bin/env bash
# Runs on the GPU machine, in one device call: the runtime's C library
# (build-runtime/), the static compiler the Python JIT runs (carry
# build/jit/flashir-bundle.xz: scripts/build-jit-compiler.sh), then the
# public Python API's GPU tests from an empty JIT cache
# (python/tests/test_api.py) and the JIT latency benchmark (jit_bench.py).
# transformers_bench.py (step transformers; TF_STEPS picks its parts).
#   bench/gpu/python_check.sh OUT [STEP...]   (steps: readme test bench bench-ptx transformers tp)
set -uo pipefail
out=${1:-${OUT:-.}}
shift || true
steps=${*:-readme test bench}
export PYTHONUNBUFFERED=1
status=0
cmake -S . -B build-runtime -G Ninja -DFLASHIR_ENABLE_COMPILER=OFF \
  -DFLASHIR_ENABLE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build build-runtime >"$out/runtime_build.log" 2>&1 || {
  echo "runtime build failed"; tail -20 "$out/runtime_build.log"; exit 1; }
xz -dkf build/jit/flashir-bundle.xz || exit 1
export FLASHIR_COMPILER=$PWD/build/jit/flashir-bundle
for step in $steps; do
  case $step in
  readme)
    # README's "From Python" example, as written, on the installed package.
    python3 -m pip install --no-deps -q --target /tmp/flashir-site . -C \
      compiler="$FLASHIR_COMPILER" >"$out/pip_install.log" 2>&1 || status=1
    awk '/^## From Python/{on=1} on&&/^```python/{code=1; next} code&&/^```/{exit} code' \
      README.md >/tmp/readme_example.py
    (cd /tmp && env -u FLASHIR_COMPILER FLASHIR_CACHE_DIR=$(mktemp -d) \
      PYTHONPATH=/tmp/flashir-site python3 readme_example.py) >"$out/readme_example.log" 2>&1 ||
      status=1
    tail -3 "$out/readme_example.log"
    ;;
  test)
    FLASHIR_CACHE_DIR=$(mktemp -d) timeout 420 python3 -m pytest -q -s \
      python/tests/test_api.py >"$out/test_api.log" 2>&1 || status=1
    grep -E "rel err|passed|failed|Error|error" "$out/test_api.log" | tail -40
    ;;
  transformers)
    timeout ${TF_TIMEOUT:-500} python3 bench/gpu/transformers_bench.py --out "$out" \
      --steps "${TF_STEPS:-correctness,decode,serve}" >"$out/transformers_bench.log" 2>&1 ||
      status=1
    grep -v "Warning\|warn" "$out/transformers_bench.log" | tail -25
    ;;
  tp)
    # Tensor parallelism (tp_bench.py): TP=1, then 2, 4, 8 as far as the
    # machine's GPUs go, NVLink multicast off, one empty JIT cache for all.
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    gpus=$(nvidia-smi -L | wc -l)
    work=$(mktemp -d)
    for tp in 1 2 4 8; do
      [ "$tp" -le "$gpus" ] || break
      FLASHIR_CACHE_DIR=$work/cache timeout "${TP_TIMEOUT:-300}" torchrun --standalone \
        --nproc_per_node="$tp" bench/gpu/tp_bench.py --out "$out" --work "$work" ${TP_ARGS:-} \
        >"$out/tp$tp.log" 2>&1 || status=1
      grep -E "^tp|Error" "$out/tp$tp.log" | tail -6
    done
    python3 bench/gpu/tp_bench.py --compare --out "$out" --work "$work" \
      >"$out/tp_compare.log" 2>&1 || status=1
    tail -6 "$out/tp_compare.log"
    ;;
  bench)
    timeout 240 python3 bench/gpu/jit_bench.py --out "$out" >"$out/jit_bench.log" 2>&1 ||
      status=1
    tail -12 "$out/jit_bench.log"
    ;;
  bench-ptx)
    # PTX bundles the driver compiles, instead of the default cubins.
    mkdir -p "$out/ptx"
    FLASHIR_JIT_IMAGE=ptx timeout 240 python3 bench/gpu/jit_bench.py --out "$out/ptx" \
      >"$out/ptx/jit_bench.log" 2>&1 || status=1
    tail -12 "$out/ptx/jit_bench.log"
    ;;
  esac
done
exit $status

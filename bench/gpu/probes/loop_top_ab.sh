#!/usr/bin/env bash
# The key loop's top in 32 bits (issue 25 experiment, not in main): A/B of
# loop_top_i32.patch against main. The patch computes the ring's slot and
# parity in i32 (main: a 64-bit division by the stage count, ~15 dependent
# uniform instructions ahead of K's wait at every tile) and each wgmma
# descriptor from a 32-bit start (main: 64-bit add, shift, mask per
# descriptor). The loop is latency-bound on each warpgroup's path outside
# its products (2026-12-07 loop phases), so the top's cycles count there.
# ptxas 13.0: the six issue rows' cubin 3.7% smaller, no new spills in
# them; the fused d128 kernels plain_d128_g4_p24 / causal_d128_g4_p16 spill
# 16 / 24 B (the CI's PTX test bounds core kernels at none).
#   bench/gpu/probes/loop_top_ab.sh build   # here: bundles in build-gpu/
#   bench/gpu/probes/loop_top_ab.sh run     # on the device, carry build-gpu
# A = main, B = the patch, over the six (plain|causal)_d(64|128|256)_g4_p16_bf16
# functions; `run` does B's small float64 checks, the A/B and the loop
# phases of B's plain d128 (compare 2026-12-07-h100-loop-phases-d128.json).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
B=build-gpu
case ${1:-} in
build)
  cd "$root"
  mkdir -p $B
  awk '/^func.func @/ { on = /@(plain|causal)_d(64|128|256)_g4_p16_bf16\(/ } on' \
    bench/gpu/prefill_kernels_wgmma.mlir > $B/loop-top-rows.mlir
  bundle() { build/bin/flashir-bundle $B/loop-top-rows.mlir -o "$B/$1" --chips=sm_90a --design=wgmma >/dev/null; }
  ninja -C build flashir-bundle >/dev/null
  bundle loop-top-A
  git apply bench/gpu/probes/loop_top_i32.patch
  trap 'git apply -R bench/gpu/probes/loop_top_i32.patch; ninja -C build flashir-bundle >/dev/null' EXIT
  ninja -C build flashir-bundle >/dev/null
  bundle loop-top-B
  ls -d $B/loop-top-?
  ;;
run)
  cd "$root"
  out=${OUT:-.}
  export PYTHONUNBUFFERED=1
  timeout 90 python3 bench/gpu/gpu_check.py --bundle $B/loop-top-B --out /tmp --images sm_90a \
    --small --no-bench > "$out/loop-top-B-small.log" 2>&1 || true
  echo "loop-top-B small: $(grep -c '^PASS' "$out/loop-top-B-small.log") passed," \
    "$(grep -c '^FAIL' "$out/loop-top-B-small.log") failed"
  mkdir -p "$out/loop-top-ab" "$out/loop-top-phases"
  timeout 200 python3 bench/gpu/prefill_bench.py --bundle $B/loop-top-A --bundle-b $B/loop-top-B \
    --no-flex --shapes 4x4096 --out "$out/loop-top-ab" > "$out/loop-top-ab.log" 2>&1 ||
    tail -5 "$out/loop-top-ab.log"
  timeout 90 python3 bench/gpu/probes/loop_phases.py --bundle $B/loop-top-B \
    --func plain_d128_g4_p16_bf16 --out "$out/loop-top-phases" > "$out/loop-top-phases.log" 2>&1 ||
    tail -5 "$out/loop-top-phases.log"
  ;;
*)
  echo "usage: $0 build|run" >&2
  exit 2
  ;;
esac

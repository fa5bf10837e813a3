#!/usr/bin/env bash
# The key loop's top in 32 bits and 64-key tiles at d128 (issue 25
# experiments, not in main): loop_top_i32.patch and kv64_d128.patch (its
# switch FLASHIR_EXP_KV64) against main. The patch computes the ring's slot and
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
# 64-key tiles at d128 (four stages, no spills) halve S's and P's registers
# at the softmax: whether ptxas then leaves P_{j-1} allocated and P.V's wait
# after the exponentials (2026-12-07-h100-p-after-wait-ab.json) is in C's
# SASS. A = main, B = the loop-top patch, C = 64-key tiles at d128, over the
# six (plain|causal)_d(64|128|256)_g4_p16_bf16 functions; `run` does B's and
# C's small float64 checks, the A/B/C, the loop phases of B's and C's plain
# d128 (compare 2026-12-07-h100-loop-phases-d128.json) and C's d128 SASS.
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
  git apply -R bench/gpu/probes/loop_top_i32.patch
  trap - EXIT
  git apply bench/gpu/probes/kv64_d128.patch
  trap 'git apply -R bench/gpu/probes/kv64_d128.patch; ninja -C build flashir-bundle >/dev/null' EXIT
  ninja -C build flashir-bundle >/dev/null
  FLASHIR_EXP_KV64=1 bundle loop-top-C
  ls -d $B/loop-top-?
  ;;
run)
  cd "$root"
  out=${OUT:-.}
  export PYTHONUNBUFFERED=1
  for x in B C; do
    timeout 90 python3 bench/gpu/gpu_check.py --bundle $B/loop-top-$x --out /tmp --images sm_90a \
      --small --no-bench > "$out/loop-top-$x-small.log" 2>&1 || true
    echo "loop-top-$x small: $(grep -c '^PASS' "$out/loop-top-$x-small.log") passed," \
      "$(grep -c '^FAIL' "$out/loop-top-$x-small.log") failed"
  done
  mkdir -p "$out/loop-top-ab"
  timeout 240 python3 bench/gpu/prefill_bench.py --bundle $B/loop-top-A \
    --bundle-b $B/loop-top-B $B/loop-top-C --no-flex --shapes 4x4096 \
    --out "$out/loop-top-ab" > "$out/loop-top-ab.log" 2>&1 || tail -5 "$out/loop-top-ab.log"
  for x in B C; do
    mkdir -p "$out/loop-top-phases-$x"
    timeout 90 python3 bench/gpu/probes/loop_phases.py --bundle $B/loop-top-$x \
      --func plain_d128_g4_p16_bf16 --out "$out/loop-top-phases-$x" \
      > "$out/loop-top-phases-$x.log" 2>&1 || tail -5 "$out/loop-top-phases-$x.log"
  done
  cuobjdump -sass -fun plain_d128_g4_p16_bf16_prefill_0 $B/loop-top-C/kernels.sm_90a.cubin \
    > "$out/loop-top-C-d128.sass" 2>&1 || true
  ;;
*)
  echo "usage: $0 build|run" >&2
  exit 2
  ;;
esac

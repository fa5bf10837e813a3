#!/usr/bin/env bash
# O's rescale after S_j's issue (issue 25 experiment, not in main): A/B of
# late_rescale.patch (environment switches FLASHIR_EXP_LATE_RESCALE and
# FLASHIR_EXP_LAZY) against main, and the key loop's phases.
#   bench/gpu/probes/late_rescale_ab.sh build   # here: bundles in build-gpu/
#   bench/gpu/probes/late_rescale_ab.sh run     # on the device, carry build-gpu
# `build` applies the patch to the working tree, builds flashir-bundle, makes
# the variant bundles and reverts the patch (then rebuilds): main's bundle
# first. The six `(plain|causal)_d(64|128|256)_g4_p16_bf16` functions:
# A = main, B = late rescale, C = B with lazy maxima at d128, D = lazy
# maxima at d128 alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
B=build-gpu
case ${1:-} in
build)
  cd "$root"
  mkdir -p $B
  awk '/^func.func @/ { on = /@(plain|causal)_d(64|128|256)_g4_p16_bf16\(/ } on' \
    bench/gpu/prefill_kernels_wgmma.mlir > $B/late-rows.mlir
  bundle() { build/bin/flashir-bundle $B/late-rows.mlir -o "$B/$1" --chips=sm_90a --design=wgmma >/dev/null; }
  ninja -C build flashir-bundle >/dev/null
  bundle late-A
  git apply bench/gpu/probes/late_rescale.patch
  trap 'git apply -R bench/gpu/probes/late_rescale.patch; ninja -C build flashir-bundle >/dev/null' EXIT
  ninja -C build flashir-bundle >/dev/null
  FLASHIR_EXP_LATE_RESCALE=1 bundle late-B
  FLASHIR_EXP_LATE_RESCALE=1 FLASHIR_EXP_LAZY=1 bundle late-C
  FLASHIR_EXP_LAZY=1 bundle late-D
  ls -d $B/late-?
  ;;
run)
  cd "$root"
  out=${OUT:-.}
  export PYTHONUNBUFFERED=1
  for x in B C D; do
    timeout 150 python3 bench/gpu/gpu_check.py --bundle $B/late-$x --out /tmp --images sm_90a \
      --small --no-bench > "$out/late-$x-small.log" 2>&1 || true
    echo "late-$x small: $(grep -c '^PASS' "$out/late-$x-small.log") passed, $(grep -c '^FAIL' "$out/late-$x-small.log") failed"
  done
  mkdir -p "$out/late-ab"
  timeout 300 python3 bench/gpu/prefill_bench.py --bundle $B/late-A --bundle-b $B/late-B $B/late-C $B/late-D \
    --no-flex --shapes 4x4096 --out "$out/late-ab" > /tmp/late-ab.log 2>&1 || tail -5 /tmp/late-ab.log
  for f in plain_d128_g4_p16_bf16 plain_d64_g4_p16_bf16; do
    for x in A B; do
      mkdir -p "$out/loop-$x"
      timeout 120 python3 bench/gpu/probes/loop_phases.py --bundle $B/late-$x --func $f \
        --out "$out/loop-$x" > /tmp/loop.log 2>&1 || tail -5 /tmp/loop.log
    done
  done
  ;;
*)
  echo "usage: $0 build|run" >&2
  exit 2
  ;;
esac

#!/usr/bin/env bash
# Runs on the GPU machine: issue 7's prefill steps, each small enough for one
# device call (bench/gpu/gpu_check.sh runs them all after the decode steps).
#   bench/gpu/prefill_check.sh PREFILL_BUNDLE OUT DECODE_BUNDLE [STEP...]
# STEP: checks (float64 checks of every kernel: sm_90a cubin and sm_80 PTX,
# the C++ launcher, the sm_75 f16 bundle PREFILL_BUNDLE-sm75, the sm_90a-only
# tiles of PREFILL_BUNDLE-sm90a, the one-stage tiles of PREFILL_BUNDLE-s1,
# the head dims and groups of PREFILL_BUNDLE-shapes and -shapes-sm75),
# split (the
# split-KV kernels of PREFILL_BUNDLE-split with their merge kernels), sanitize
# (compute-sanitizer memcheck + racecheck), bench (prefill_bench.py), prefix
# (shared_prefix_bench.py), runtime (pytest of python/tests). Default: all
# six. Needs build-runtime (built here when missing). FLASHIR_IMAGES="sm_90a"
# (or "sm_80") limits the float64 checks to those chips' images (to fit a
# step in one device call). Exit status: nonzero when a check failed.
set -uo pipefail
prefill=$1
out=$2
decode=$3
shift 3
steps=${*:-checks split sanitize bench prefix runtime}
export PYTHONUNBUFFERED=1
status=0
if [ ! -x build-runtime/bench/gpu/flashir-decode-check ]; then
  cmake -S . -B build-runtime -G Ninja -DFLASHIR_ENABLE_COMPILER=OFF \
    -DFLASHIR_ENABLE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build build-runtime >/dev/null || echo "runtime build failed"
fi
# Float64 checks of every kernel of bundle $1 (log $out/$2; $3 labels the
# count).
check_bundle() {
  python3 bench/gpu/gpu_check.py --bundle "$1" --no-bench --out /tmp \
    ${FLASHIR_IMAGES:+--images $FLASHIR_IMAGES} \
    > "$out/$2" 2>&1 || status=1
  tail -1 "$out/$2"
  grep -c '^PASS' "$out/$2" | sed "s/^/PASS lines$3: /"
  grep '^FAIL' "$out/$2" | head -5
}
for step in $steps; do
  case $step in
  checks)
    check_bundle "$prefill" prefill_checks.log ""
    # The same kernels through the C++ runtime (KernelBundle::launchPrefill).
    for chip in sm_90a sm_80:ptx; do
      build-runtime/bench/gpu/flashir-decode-check "$prefill" $chip |
        tee -a "$out/prefill_launch.log" | tail -1
    done
    # The f16 kernels' sm_75 PTX (m16n8k8, no cp.async) through the driver.
    [ -d "$prefill-sm75" ] && check_bundle "$prefill-sm75" prefill_checks_sm75.log " (sm_75)"
    # Tiles only sm_90a holds (d256 Q in shared memory, 3-4 stage rings).
    [ -d "$prefill-sm90a" ] && check_bundle "$prefill-sm90a" prefill_checks_sm90a.log " (sm_90a tiles)"
    # One-stage tiles (one K and one V slot).
    [ -d "$prefill-s1" ] && check_bundle "$prefill-s1" prefill_checks_s1.log " (one stage)"
    # Head dims past 64/128/256 and groups past 8 (bench/gpu/prefill_shapes.mlir).
    [ -d "$prefill-shapes" ] && check_bundle "$prefill-shapes" prefill_checks_shapes.log " (shapes)"
    [ -d "$prefill-shapes-sm75" ] && check_bundle "$prefill-shapes-sm75" prefill_checks_shapes_sm75.log " (shapes, sm_75)"
    ;;
  split)
    check_bundle "$prefill-split" prefill_split_checks.log " (split)"
    ;;
  sanitize)
    for b in "$prefill" "$prefill-sm75" "$prefill-split" "$prefill-sm90a" "$prefill-s1" \
      "$prefill-shapes" "$prefill-shapes-sm75"; do
      [ -d "$b" ] || continue
      for tool in memcheck racecheck; do
        log="$out/prefill-sanitizer-$tool${b##*prefill}.log"
        compute-sanitizer --tool $tool --error-exitcode 3 \
          python3 bench/gpu/gpu_check.py --bundle "$b" --out /tmp --small > "$log" 2>&1
        rc=$?
        [ $rc = 0 ] || status=1
        echo "compute-sanitizer $tool $b: exit $rc, $(grep -c '^PASS' "$log") checks," \
          "$(grep -c 'ERROR SUMMARY: 0 errors' "$log") clean summaries"
        grep -m3 -E "RACECHECK SUMMARY|ERROR SUMMARY" "$log"
      done
    done
    ;;
  bench)
    python3 bench/gpu/prefill_bench.py --bundle "$prefill" --out "$out" \
      > "$out/prefill_bench.log" 2>&1 || status=1
    tail -4 "$out/prefill_bench.log"
    # The one-stage tiles next to the peers (their own rows).
    if [ -d "$prefill-s1" ]; then
      python3 bench/gpu/prefill_bench.py --bundle "$prefill-s1" --out /tmp --no-flex \
        --only 's1$' > "$out/prefill_bench_s1.log" 2>&1 || status=1
      grep -c '^{' "$out/prefill_bench_s1.log" | sed 's/^/one-stage rows: /'
    fi
    ;;
  runtime)
    # The Python package over the C API: split-KV decode, split-KV prefill
    # through plan/run, the shared-prefix runner (bundles DECODE-split and
    # PREFILL-split).
    FLASHIR_BUNDLE_SPLIT="$decode-split" FLASHIR_BUNDLE_PREFILL_SPLIT="$prefill-split" \
      python3 -m pytest -q python/tests > "$out/python_tests.log" 2>&1 || status=1
    tail -3 "$out/python_tests.log"
    ;;
  prefix)
    # Shared-prefix decoding composed from the prefill and decode kernels.
    python3 bench/gpu/shared_prefix_bench.py --decode-bundle "$decode" \
      --prefill-bundle "$prefill" --out "$out" > "$out/shared_prefix.log" 2>&1 || status=1
    tail -2 "$out/shared_prefix.log"
    ;;
  *) echo "unknown step $step"; status=2 ;;
  esac
done
exit $status

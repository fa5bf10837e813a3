#!/usr/bin/env bash
# Runs on the GPU machine, in one device call: the float64 checks of the GPU
# backend's coverage (issue 23) -- the decode kernels of
# bench/gpu/decode_shapes.mlir (sm_90a cubin, sm_80 PTX; their f16 kernels'
# sm_75 PTX; split-KV with merge kernels) and the prefill kernels of
# bench/gpu/prefill_shapes.mlir, on batches with NaN in every unowned pool
# slot, shuffled and shared pages, empty requests -- then the coverage
# benchmarks (coverage_bench.py: fused RoPE, head dims 96/192, group 16, HND)
# and compute-sanitizer memcheck + racecheck on small cases.
#   bench/gpu/coverage_check.sh OUT [STEP...]   (steps: decode prefill bench sanitize)
set -uo pipefail
out=${1:-${OUT:-.}}
shift || true
steps=${*:-decode prefill bench sanitize}
export PYTHONUNBUFFERED=1
status=0
# Float64 checks of bundle $1 into $out/$2 (more gpu_check.py options after).
check() {
  local bundle=$1 log=$2
  shift 2
  python3 bench/gpu/gpu_check.py --bundle "$bundle" --no-bench --out /tmp "$@" \
    >"$out/$log" 2>&1 || status=1
  echo "$log: $(grep -c '^PASS' "$out/$log") PASS, $(grep -c '^FAIL' "$out/$log") FAIL; $(tail -1 "$out/$log")"
  grep '^FAIL' "$out/$log" | head -8
}
for step in $steps; do
  case $step in
  decode)
    check build-gpu/bundle-shapes decode_shapes.log
    check build-gpu/bundle-shapes-sm75 decode_shapes_sm75.log
    check build-gpu/bundle-shapes-split decode_shapes_split.log --images sm_90a
    ;;
  prefill)
    check build-gpu/bundle-prefill-shapes prefill_shapes.log
    [ -d build-gpu/bundle-prefill-shapes-sm75 ] &&
      check build-gpu/bundle-prefill-shapes-sm75 prefill_shapes_sm75.log
    ;;
  bench)
    (cd bench/gpu && python3 coverage_bench.py --bundle ../../build-gpu/bundle \
      --shapes ../../build-gpu/bundle-shapes --prefill ../../build-gpu/bundle-prefill \
      --prefill-shapes ../../build-gpu/bundle-prefill-shapes --out "$out") >"$out/coverage_bench.log" 2>&1 || status=1
    cat "$out/coverage_bench.log" | tail -8
    ;;
  sanitize)
    for tool in memcheck racecheck; do
      for b in bundle-shapes bundle-prefill-shapes; do
        compute-sanitizer --tool $tool --error-exitcode 3 python3 bench/gpu/gpu_check.py \
          --bundle build-gpu/$b --out /tmp --small --no-bench --images sm_90a \
          >"$out/sanitizer-$tool-$b.log" 2>&1 || status=1
        echo "$tool $b: $(grep -cE "ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards" "$out/sanitizer-$tool-$b.log") clean summaries, $(tail -1 "$out/sanitizer-$tool-$b.log")"
      done
    done
    ;;
  esac
done
exit $status

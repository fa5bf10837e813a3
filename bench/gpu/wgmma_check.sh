#!/usr/bin/env bash
# Runs on the GPU machine: issue 25's sm_90a wgmma prefill kernels
# (build-gpu/bundle-prefill-wgmma, scripts/gpu-bundle.sh), in one device call:
#   bench/gpu/wgmma_check.sh BUNDLE OUT [STEP...]
# STEP: small (one small batch per kernel, under a time limit: a kernel that
# waits forever on a barrier stops the run here), checks (gpu_check.py's
# float64 checks of every kernel), bench (prefill_bench.py's rows of the
# bundle's functions next to SDPA and FlexAttention), sanitize
# (compute-sanitizer memcheck, racecheck and synccheck on small batches),
# ncu (Nsight Compute on the B4 S4096 d128 kernel), split (the float64
# checks of BUNDLE-split, its attentions split-KV), cascade
# (shared_prefix_bench.py with build-gpu/cascade-*: the mma.sync prefix
# kernel at 16 chunks, then the wgmma one at WGMMA_PREFIX_CHUNKS, default
# 8; the runtime's cascade through the C library, built here), nsmid
# (whether %nsmid is the SM count: the persistent kernel's workers). Default:
# small checks bench. Exit status: nonzero when a step failed.
set -uo pipefail
bundle=$1
out=$2
shift 2
steps=${*:-small checks bench}
export PYTHONUNBUFFERED=1
status=0
check() {  # log, timeout, gpu_check.py arguments
  local log=$1 limit=$2
  shift 2
  timeout "$limit" python3 bench/gpu/gpu_check.py --bundle "$bundle" --out /tmp \
    --images sm_90a "$@" >"$out/$log" 2>&1
  local rc=$?
  echo "$log: exit $rc, $(grep -c '^PASS' "$out/$log") passed, $(grep -c '^FAIL' "$out/$log") failed"
  grep '^FAIL' "$out/$log" | head -5
  [ $rc = 0 ] || { tail -5 "$out/$log"; return 1; }
}
for step in $steps; do
  case $step in
  small) check wgmma_small.log 120 --small --no-bench || exit 1 ;;
  checks) check wgmma_checks.log 400 --no-bench || status=1 ;;
  split)
    (bundle=${WGMMA_SPLIT_BUNDLE:-$bundle-split}
     check wgmma_split_checks.log 400 --no-bench) || status=1 ;;
  cascade)
    cmake -S . -B build-runtime -G Ninja -DFLASHIR_ENABLE_COMPILER=OFF \
      -DFLASHIR_ENABLE_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null &&
      cmake --build build-runtime --target flashir_c >"$out/runtime_build.log" 2>&1 ||
      echo "runtime build failed (the runtime rows will say so)"
    c=build-gpu/cascade
    for prefill in prefill prefill-wgmma; do
      chunks=16
      [ $prefill = prefill-wgmma ] && chunks=${WGMMA_PREFIX_CHUNKS:-8}
      mkdir -p "$out/cascade-$prefill"
      timeout 300 python3 bench/gpu/shared_prefix_bench.py --decode-bundle $c-decode \
        --prefill-bundle $c-$prefill --prefix-chunks $chunks \
        --out "$out/cascade-$prefill" >"$out/cascade-$prefill.log" 2>&1 || status=1
      echo "== cascade, prefix kernel $prefill ($chunks chunks)"
      python3 - "$out/cascade-$prefill/shared_prefix.json" <<'PY' || tail -5 "$out/cascade-$prefill.log"
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    keys = [k for k in r if k.endswith("_ms") or k in ("speedup", "ok")]
    print(r["case"], {k: (round(r[k], 5) if isinstance(r[k], float) else r[k]) for k in keys})
PY
    done
    ;;
  bench)
    # WGMMA_BENCH_B: more bundles (space-separated) timed beside this one
    # (A/B/C...).
    # shellcheck disable=SC2086
    timeout 400 python3 bench/gpu/prefill_bench.py --bundle "$bundle" --out "$out" \
      ${WGMMA_BENCH_B:+--bundle-b $WGMMA_BENCH_B} \
      --only "${WGMMA_BENCH_ONLY:-_d128_}" >"$out/wgmma_bench.log" 2>&1 || status=1
    python3 - "$out/prefill_bench.json" <<'PY' || tail -8 "$out/wgmma_bench.log"
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(r["kernel"], r["case"], {k: round(v, 3) for k, v in r.items()
                                   if k.endswith(("TFLOPs", "over_cudnn", "kv_TBps"))})
PY
    ;;
  nsmid)
    nvcc -arch=sm_90a bench/gpu/probes/hopper/nsmid_probe.cu -o /tmp/nsmid &&
      /tmp/nsmid | tee "$out/nsmid.json" || status=1
    ;;
  sanitize)
    for tool in memcheck racecheck synccheck; do
      log="$out/wgmma-sanitizer-$tool.log"
      timeout 300 compute-sanitizer --tool $tool --error-exitcode 3 \
        python3 bench/gpu/gpu_check.py --bundle "$bundle" --out /tmp --small \
        --no-bench --images sm_90a >"$log" 2>&1
      rc=$?
      [ $rc = 0 ] || status=1
      echo "compute-sanitizer $tool: exit $rc, $(grep -c '^PASS' "$log") checks"
      grep -m3 -E "RACECHECK SUMMARY|ERROR SUMMARY" "$log"
    done
    ;;
  ncu)
    # One launch each of the paged (page 16) and the contiguous (one
    # 4096-key page) B4 S4096 d128 kernels.
    for func in ${WGMMA_NCU_FUNCS:-plain_d128_g4_p16_bf16 plain_d128_g4_p4096_bf16}; do
      timeout 280 ncu --kernel-name regex:"${func}_prefill" --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
        --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
        --section Occupancy --section LaunchStats \
        python3 bench/gpu/prefill_bench.py --bundle "$bundle" --out /tmp \
        --only "${func}\$" --no-flex --shapes 4x4096 >"$out/wgmma_ncu_$func.log" 2>&1 || status=1
      echo "== $func"
      grep -E "Duration|Throughput|Stall|Issued Warp|Eligible|Active Warps|Registers|L2 Hit|Mem Busy|Max Bandwidth|Issue Slots" \
        "$out/wgmma_ncu_$func.log" | head -40
    done
    ;;
  *) echo "unknown step $step"; status=1 ;;
  esac
done
exit $status

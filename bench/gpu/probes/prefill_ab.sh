#!/usr/bin/env bash
# A/B of prefill kernel generators on the GPU machine, in one device call:
#   bench/gpu/probes/prefill_ab.sh OUT REGEX NCU_KERNEL BUNDLE...
# float64 checks of the last bundle (sm_90a cubin; AB_CHECKS=0 skips them),
# prefill_bench.py on the
# kernels REGEX matches for every bundle (each next to SDPA-FA2/cuDNN), and
# unless NCU_KERNEL is "-": Nsight Compute sections of that kernel of the
# last bundle and of SDPA-FA2 on the same shape, plus its SASS (cuobjdump).
set -uo pipefail
out=$1 regex=$2 ncuk=$3
shift 3
bundles=("$@")
b=${bundles[-1]}
export PYTHONUNBUFFERED=1
if [ "${AB_CHECKS:-1}" != 0 ]; then
  python3 bench/gpu/gpu_check.py --bundle "$b" --no-bench --out /tmp --images sm_90a \
    > "$out/ab_checks.log" 2>&1
  tail -1 "$out/ab_checks.log"; grep '^FAIL' "$out/ab_checks.log" | head -5
fi
for x in "${bundles[@]}"; do
  echo "== $x"
  python3 bench/gpu/prefill_bench.py --bundle "$x" --out /tmp --only "$regex" --no-flex 2>&1 |
    tee -a "$out/ab_bench.log" | python3 -c '
import json, sys
for line in sys.stdin:
    if not line.startswith("{"): print(line.rstrip()); continue
    r = json.loads(line)
    print(r["case"], r.get("causal"), r["kernel"], "%.1f TFLOP/s" % r.get("flashir_sm_90a cubin_TFLOPs", 0),
          "fa2 %.1f" % r.get("sdpa_fa2_TFLOPs", 0), "ratio %.3f" % r.get("flashir_sm_90a cubin_over_fa2", 0))'
done
if [ "$ncuk" != - ]; then
  sec="--section WarpStateStats --section InstructionStats --section ComputeWorkloadAnalysis --section SchedulerStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
  for k in prefill flash_fwd; do
    ncu --clock-control none -k regex:$k --launch-skip 2 --launch-count 1 $sec \
      --section SourceCounters -o "/tmp/ncu_$k" -f \
      python3 bench/gpu/probes/prefill_ncu.py --bundle "$b" --kernel "$ncuk" \
      > "$out/ncu_$k.log" 2>&1
    ncu --import "/tmp/ncu_$k.ncu-rep" > "$out/ncu_$k.txt" 2>&1
    echo "ncu $k: $(grep -c . "$out/ncu_$k.txt") lines"
  done
  # Per-SASS-instruction stall samples of the FlashIR kernel.
  ncu --import /tmp/ncu_prefill.ncu-rep --page source --csv --print-source sass \
    > "$out/ncu_source.csv" 2>&1
  echo "ncu source: $(wc -l < "$out/ncu_source.csv") lines"
  cuobjdump -sass -fun "$(python3 -c "
import json; m=json.load(open('$b/manifest.json'))
print([k['name'] for k in m['kernels'] if k['name'].rsplit('_prefill_',1)[0]=='$ncuk'][0])")" \
    "$b/kernels.sm_90a.cubin" > "$out/sass.txt" 2>&1
  echo "sass: $(wc -l < "$out/sass.txt") lines"
fi

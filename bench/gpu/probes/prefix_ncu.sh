#!/usr/bin/env bash
# Nsight Compute of the shared-prefix benchmark's prefix kernel (fused head
# groups, one wave; B64 prefix 32768) on the GPU machine, to set next to the
# steady-state prefill kernel's profile (prefill_ab.sh):
#   bench/gpu/probes/prefix_ncu.sh OUT PREFILL_BUNDLE DECODE_BUNDLE
set -uo pipefail
out=$1 prefill=$2 decode=$3
sec="--section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
ncu --clock-control none -k regex:fused_prefill --launch-skip 2 --launch-count 1 $sec \
  -o /tmp/ncu_prefix -f python3 bench/gpu/shared_prefix_bench.py --decode-bundle "$decode" \
  --prefill-bundle "$prefill" --out /tmp > "$out/ncu_prefix.log" 2>&1
ncu --import /tmp/ncu_prefix.ncu-rep > "$out/ncu_prefix.txt" 2>&1
grep -E "Duration|Registers Per|Achieved Occupancy|Compute \(SM\) Throughput|DRAM Throughput|Block Size|Grid Size|Waves Per SM" "$out/ncu_prefix.txt" | head -12

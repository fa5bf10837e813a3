set -u
for kern in plain_d256_g4_p16_bf16 plain_d128_g4_p16_bf16; do
  timeout 200 ncu -k regex:"${kern}_prefill" --launch-skip 2 --launch-count 1 --set full --import-source no -o /tmp/ncu_$kern -f \
    python3 bench/gpu/probes/prefill_ncu.py --bundle build-gpu/bundle-band --kernel $kern > $OUT/ncu_$kern.log 2>&1
  ncu --import /tmp/ncu_$kern.ncu-rep > $OUT/ncu_$kern.txt 2>&1
  ncu --import /tmp/ncu_$kern.ncu-rep --page source --csv --print-source sass > $OUT/ncu_${kern}_source.csv 2>&1
  ncu --import /tmp/ncu_$kern.ncu-rep --page raw --csv --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|regex:sm__pipe_tensor.*pct.*|regex:sm__inst_executed_pipe_.*pct.*' > $OUT/ncu_${kern}_raw.csv 2>&1
  grep -E "Duration|DRAM Throughput|Compute \(SM\)|L2 Hit|Issued Warp|Eligible Warps|Registers Per" $OUT/ncu_$kern.txt | head -12
done
ls -la $OUT

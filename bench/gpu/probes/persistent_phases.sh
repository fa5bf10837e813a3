#!/usr/bin/env bash
# Where the persistent wgmma prefill kernel loses against one CTA per q tile
# (issue 25; bench/results/README.md, 2026-12-07: contiguous d128 -5%, d64
# -4%). `persistent_phases.sh build` here (no GPU): the ten core rows'
# functions of bench/gpu/prefill_kernels_wgmma.mlir bundled one CTA per q
# tile (build-gpu/rows-1) and persistent (build-gpu/rows-PG), and the four
# causal ones persistent alone (build-gpu/pg-causal). `persistent_phases.sh
# run` on the device (carry build-gpu): compute-sanitizer over the
# persistent causal kernels, then cta_phases.py per CTA on rows-1 and with
# --sums (per q tile) on rows-PG, at B4 S4096, JSON under $OUT.
set -u
src=bench/gpu/prefill_kernels_wgmma.mlir
R=build-gpu/rows
if [ "${1:-run}" = build ]; then
  mkdir -p build-gpu
  awk '/^func.func @/ { on = /@(plain|causal)_d(64|128|256)_g4_(p16|p4096)_(bf16|f16)\(/ } on' \
    $src >build-gpu/core_rows.mlir
  awk '/^func.func @/ { on = /@causal_/ } on' build-gpu/core_rows.mlir >build-gpu/pg_causal.mlir
  build/bin/flashir-bundle build-gpu/core_rows.mlir -o $R-1 --chips=sm_90a --design=wgmma \
    --persistent-prefill=off &&
    build/bin/flashir-bundle build-gpu/core_rows.mlir -o $R-PG --chips=sm_90a \
      --design=wgmma --persistent-prefill=on &&
    build/bin/flashir-bundle build-gpu/pg_causal.mlir -o build-gpu/pg-causal \
      --chips=sm_90a --design=wgmma --persistent-prefill=on
  exit
fi
status=0
mkdir -p "$OUT/sanitize"
bash bench/gpu/wgmma_check.sh build-gpu/pg-causal "$OUT/sanitize" small sanitize || status=1
for func in plain_d128_g4_p16_bf16 plain_d128_g4_p4096_bf16 plain_d64_g4_p16_bf16; do
  for mode in one persistent; do
    dir="$OUT/$mode"
    mkdir -p "$dir"
    if [ $mode = one ]; then
      args=(--bundle $R-1)
    else
      args=(--bundle $R-PG --sums)
    fi
    timeout 120 python3 bench/gpu/probes/cta_phases.py "${args[@]}" --func $func \
      --out "$dir" >"$dir/$func.log" 2>&1 || { status=1; tail -5 "$dir/$func.log"; }
    grep -E '"(plain_ms|traced_ms)"' "$dir/$func.log" | tr -d '\n '
    echo " $mode $func"
  done
done
exit $status

#!/usr/bin/env bash
# The main job on the bundled examples: parse, verify and run the attn
# pipeline on examples/*.mlir, printing the result.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

PIPELINE="builtin.module(attn-import-variants,canonicalize,symbol-dce)"
for example in "$FLASHIR_ROOT"/examples/*.mlir; do
  echo
  echo "== $(basename "$example"): flashir-opt --pass-pipeline='$PIPELINE'"
  "$FLASHIR_BUILD_DIR/bin/flashir-opt" --pass-pipeline="$PIPELINE" "$example"
done

echo
echo "== CPU execution: GQA decode (32/8 heads, d128, bf16, 16-token pages) JIT-compiled"
echo "   through attn-to-cpu and checked against the float64 reference"
"$FLASHIR_BUILD_DIR/bin/flashir-run" --variant=causal --dtype=bf16 \
  --qo-heads=32 --kv-heads=8 --head-dim=128 --page-size=16 --shared-pages \
  --qo-lens=1,1,1,1 --kv-lens=100,517,33,1000

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
echo "== NVIDIA: examples/decode_paged.mlir -> kernel bundle for every supported chip"
bundle="$FLASHIR_BUILD_DIR/demo-bundle"
if "$FLASHIR_BUILD_DIR/bin/flashir-bundle" "$FLASHIR_ROOT/examples/decode_paged.mlir" -o "$bundle"; then
  echo "   $(ls "$bundle" | tr '\n' ' ')"
else
  echo "   (skipped: the NVIDIA path needs the CUDA toolkit's libdevice and ptxas)"
fi

if [ -f "$bundle/manifest.json" ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1 &&
   python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  echo
  echo "== GPU found: running the bundle's kernels against a float64 reference"
  python3 "$FLASHIR_ROOT/bench/gpu/gpu_check.py" --bundle "$bundle" --out "$bundle" --no-bench
else
  echo
  echo "== No GPU here: the same decode (GQA 32/8, d128, bf16, 16-token pages) runs on"
  echo "   the CPU path instead, JIT-compiled through attn-to-cpu and checked against"
  echo "   the float64 reference"
  "$FLASHIR_BUILD_DIR/bin/flashir-run" --variant=causal --dtype=bf16 \
    --qo-heads=32 --kv-heads=8 --head-dim=128 --page-size=16 --shared-pages \
    --qo-lens=1,1,1,1 --kv-lens=100,517,33,1000
fi

#!/usr/bin/env bash
# Compiles bench/gpu/decode_kernels.mlir into a kernel bundle for every
# supported chip (PTX, and cubins where ptxas is found) in build-gpu/bundle,
# for bench/gpu/gpu_check.sh on the GPU machine.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
"$FLASHIR_BUILD_DIR/bin/flashir-bundle" "$FLASHIR_ROOT/bench/gpu/decode_kernels.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle"

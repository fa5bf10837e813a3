#!/usr/bin/env bash
# Compiles bench/gpu/decode_kernels.mlir into kernel bundles for every
# supported chip (PTX, and cubins where ptxas is found), for
# bench/gpu/gpu_check.sh on the GPU machine:
#   build-gpu/bundle        one CTA per (request, KV head)
#   build-gpu/bundle-split  split-KV: runtime chunks + merge kernel
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
bundle="$FLASHIR_BUILD_DIR/bin/flashir-bundle"
kernels="$FLASHIR_ROOT/bench/gpu/decode_kernels.mlir"
"$bundle" "$kernels" -o "$FLASHIR_ROOT/build-gpu/bundle"
"$bundle" "$kernels" -o "$FLASHIR_ROOT/build-gpu/bundle-split" \
  --schedule='attn-import-variants,attn-split-kv{chunk-size=0}'

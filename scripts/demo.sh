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

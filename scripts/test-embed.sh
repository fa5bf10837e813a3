#!/usr/bin/env bash
# The embedding check of scripts/test.sh: installs the build into a fresh
# prefix, configures and builds examples/embed against the installed package
# only, runs its embed-opt on examples/embed/attention.mlir (linalg attention
# raised to attn, compiled for the CPU, and for NVIDIA where the CUDA
# toolkit's libdevice is found) and FileChecks the result.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FLASHIR_BUILD_DIR:-$root/build}
llvm=/usr/lib/llvm-22
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
cmake -S "$root/examples/embed" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
# Only the installed package: nothing points into the build tree.
if grep -q "$build" "$work/build/CMakeCache.txt"; then
  echo "the example's configuration refers to the build tree $build" >&2
  exit 1
fi
"$work/build/embed-opt" "$root/examples/embed/attention.mlir" --target=cpu |
  "$llvm/bin/FileCheck" "$root/examples/embed/attention.mlir" --check-prefix=CPU
for toolkit in "${CUDA_HOME:-}" /usr/local/cuda; do
  if [ -n "$toolkit" ] && [ -d "$toolkit/nvvm/libdevice" ]; then
    "$work/build/embed-opt" "$root/examples/embed/attention.mlir" --target=nvidia \
      --chip=sm_90a --toolkit="$toolkit" |
      "$llvm/bin/FileCheck" "$root/examples/embed/attention.mlir" --check-prefix=NVIDIA
    echo "embed-opt: CPU and NVIDIA ($toolkit) pipelines checked"
    exit 0
  fi
done
echo "embed-opt: CPU pipeline checked (no CUDA toolkit: NVIDIA skipped)"

#!/usr/bin/env bash
# The embedding check of scripts/test.sh: installs the build into a fresh
# prefix, configures and builds examples/embed against the installed package
# only, and runs the example's lit suite (examples/embed/test: linalg
# attention raised to attn and compiled for the CPU, and for NVIDIA where the
# CUDA toolkit's libdevice is found).
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
toolkit=""
for candidate in "${CUDA_HOME:-}" /usr/local/cuda; do
  if [ -n "$candidate" ] && [ -d "$candidate/nvvm/libdevice" ]; then
    toolkit=$candidate
    break
  fi
done
"$llvm/bin/lit" -a "$root/examples/embed/test" --param exec_root="$work" \
  --param embed_opt="$work/build/embed-opt" --param filecheck="$llvm/bin/FileCheck" \
  --param toolkit="$toolkit"

#!/usr/bin/env bash
# Installs what is missing (Debian 12), then configures and builds FlashIR
# incrementally in $FLASHIR_BUILD_DIR (default: build/). Sourced by demo.sh
# and test.sh; can also be run on its own.
set -euo pipefail

FLASHIR_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FLASHIR_BUILD_DIR=${FLASHIR_BUILD_DIR:-$FLASHIR_ROOT/build}
LLVM_PREFIX=/usr/lib/llvm-22

packages=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22
          lld-22 libclang-rt-22-dev ninja-build cmake libgtest-dev libbenchmark-dev
          python3 g++)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

if [ ! -f "$FLASHIR_BUILD_DIR/build.ninja" ]; then
  echo "== configuring $FLASHIR_BUILD_DIR"
  cmake -S "$FLASHIR_ROOT" -B "$FLASHIR_BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=$LLVM_PREFIX/bin/clang \
    -DCMAKE_CXX_COMPILER=$LLVM_PREFIX/bin/clang++ \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=$LLVM_PREFIX/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=$LLVM_PREFIX/bin/lit >/dev/null
fi
echo "== building"
cmake --build "$FLASHIR_BUILD_DIR"

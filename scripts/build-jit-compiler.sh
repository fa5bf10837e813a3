#!/usr/bin/env bash
# A flashir-bundle for machines without LLVM/MLIR (the GPU machine): the
# tool's objects and this build's FlashIR archives linked against LLVM's and
# MLIR's static archives (only system libc, libm and libzstd stay shared),
# stripped, as build/jit/flashir-bundle, plus build/jit/flashir-bundle.xz to
# carry (unpack with `xz -dk`). The Python JIT (python/flashir/jit.py) finds
# build/jit/flashir-bundle first. Needs a configured and built build/
# (scripts/setup.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" >/dev/null
build=$FLASHIR_BUILD_DIR
cmake --build "$build" --target flashir-bundle >/dev/null
llvm_lib="$LLVM_PREFIX/lib"
mkdir -p "$build/jit"
mlir_archives=$(ls "$llvm_lib"/libMLIR*.a | grep -v Test)
"$LLVM_PREFIX/bin/clang++" -fuse-ld=lld -O3 -Wl,--gc-sections -static-libstdc++ \
  -static-libgcc -s \
  "$build"/tools/flashir-bundle/CMakeFiles/flashir-bundle.dir/*.cpp.o \
  -Wl,--start-group "$build"/lib/libFlashIR*.a "$build/lib/ABI/libFlashIRABI.a" \
  "$build/lib/Target/libFlashIRTarget.a" $mlir_archives "$llvm_lib"/libLLVM*.a \
  -Wl,--end-group /usr/lib/x86_64-linux-gnu/libzstd.so.1 \
  /usr/lib/x86_64-linux-gnu/libz.a -lpthread -ldl -lm -lrt \
  -o "$build/jit/flashir-bundle" 2> >(grep -v '^ld.lld: warning' >&2)
xz -T2 -3 -f -k "$build/jit/flashir-bundle"
ls -l "$build/jit"

#!/usr/bin/env bash
# Every test: unit tests (GoogleTest), the lit suite, the runtime-only build
# (no LLVM/MLIR), the check that docs/generated matches the ODS, and a GCC
# build of the tools (lit, and kernels identical to clang's). Ends with
# "N passed, N failed" and exits non-zero on any failure.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" || exit 1

results=$(mktemp -d)
passed=0
failed=0

# Reads JUnit XML files and adds their pass/fail counts.
count() {
  read -r p f < <(python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
p = f = 0
for path in sys.argv[1:]:
    for case in ET.parse(path).getroot().iter("testcase"):
        bad = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        if bad: f += 1
        elif not skipped: p += 1
print(p, f)
PY
)
  passed=$((passed + p))
  failed=$((failed + f))
}

# A section's heading, with the seconds since the start.
section() { echo "== $1 (${SECONDS} s)"; }

# A check that is not a test framework's: one pass or one failure.
check() {
  local name=$1; shift
  if "$@" >"$results/$name.log" 2>&1; then
    passed=$((passed + 1)); echo "PASS: $name"
  else
    failed=$((failed + 1)); echo "FAIL: $name"; cat "$results/$name.log"
  fi
}

section "unit tests"
(cd "$FLASHIR_BUILD_DIR" && ctest --output-on-failure --output-junit "$results/ctest.xml") ||
  true
if [ -f "$results/ctest.xml" ]; then count "$results/ctest.xml"; else failed=$((failed + 1)); fi

section "lit"
"$LLVM_PREFIX/bin/lit" -sv --xunit-xml-output "$results/lit.xml" \
  "$FLASHIR_BUILD_DIR/test" || true
if [ -f "$results/lit.xml" ]; then count "$results/lit.xml"; else failed=$((failed + 1)); fi

section "generated docs match the ODS"
check docs-up-to-date "$FLASHIR_ROOT/scripts/update-docs.sh" --check

section "Python sources compile (their tests need the GPU machine)"
check python-compile python3 -m py_compile "$FLASHIR_ROOT"/python/flashir/*.py \
  "$FLASHIR_ROOT"/python/flashir/integrations/*.py "$FLASHIR_ROOT"/python/build_backend/*.py \
  "$FLASHIR_ROOT"/python/tests/*.py "$FLASHIR_ROOT"/bench/gpu/*.py \
  "$FLASHIR_ROOT"/bench/gpu/probes/*.py

section "Python JIT without a GPU: attn IR, flashir-bundle, the on-disk cache"
check python-jit env FLASHIR_COMPILER="$FLASHIR_BUILD_DIR/bin/flashir-bundle" \
  python3 "$FLASHIR_ROOT/python/tests/test_jit.py"

section "Python package: pip wheel (pyproject.toml, offline), installed and imported"
check python-package bash "$FLASHIR_ROOT/scripts/test-python-package.sh"

section "runtime-only build (no LLVM/MLIR)"
rt="$FLASHIR_BUILD_DIR-runtime"
check runtime-only-build bash -c "
  cmake -S '$FLASHIR_ROOT' -B '$rt' -G Ninja -DFLASHIR_ENABLE_COMPILER=OFF \
    -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build '$rt' &&
  ! grep -q '^MLIR_DIR:PATH=/' '$rt/CMakeCache.txt' &&
  cd '$rt' && ctest --output-on-failure"

section "embedding: install, then examples/embed against the installed package"
check embedding bash "$FLASHIR_ROOT/scripts/test-embed.sh"

section "AddressSanitizer + UndefinedBehaviorSanitizer: unit tests and lit"
# FlashIR's own code instrumented (LLVM/MLIR are Debian's builds): the tools
# and the runtime run the whole lit suite, fuzz campaigns included, and the
# unit tests. Any report fails the run (-fno-sanitize-recover).
# Configures $1 as a clang build with FLASHIR_SANITIZE=$2 (first use only).
# This build and GCC's precompile the MLIR headers (a quarter of the compile
# time); the first build does not, so it checks every file's own includes.
configureSanitized() {
  [ -f "$1/build.ninja" ] || cmake -S "$FLASHIR_ROOT" -B "$1" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DFLASHIR_SANITIZE="$2" \
    -DFLASHIR_PRECOMPILED_HEADERS=ON \
    -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
    -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" >/dev/null
}

asanUbsan() (
  dir="$FLASHIR_BUILD_DIR-asan"
  configureSanitized "$dir" address,undefined && cmake --build "$dir" || exit 1
  # allow_user_poisoning=0: LLVM's inline allocator code in our instrumented
  # objects poisons slabs that uninstrumented libLLVM then uses (false
  # use-after-poison reports).
  export ASAN_OPTIONS=detect_leaks=1:detect_odr_violation=0:allow_user_poisoning=0
  export ASAN_SYMBOLIZER_PATH="$LLVM_PREFIX/bin/llvm-symbolizer"
  export UBSAN_OPTIONS="print_stacktrace=1:external_symbolizer_path=$ASAN_SYMBOLIZER_PATH"
  (cd "$dir" && ctest --output-on-failure) && "$LLVM_PREFIX/bin/lit" -q "$dir/test"
)
check asan-ubsan asanUbsan

section "ThreadSanitizer: the dialect's threaded verification"
tsan() (
  dir="$FLASHIR_BUILD_DIR-tsan"
  configureSanitized "$dir" thread &&
    cmake --build "$dir" --target FlashIRDialectTests || exit 1
  TSAN_OPTIONS="halt_on_error=1 suppressions=$FLASHIR_ROOT/scripts/tsan-suppressions.txt" \
    timeout 600 "$dir/unittests/FlashIRDialectTests"
)
check tsan tsan

section "GCC build: lit, and the same kernels as clang's build"
# The emitted IR must not depend on the host compiler: C++ leaves the order
# of a call's arguments unspecified (GCC evaluates them right to left, clang
# left to right), so operands are built in statements
# (scripts/check-sibling-builders.py finds violations). The tools built by
# GCC 12 run the lit suite, and their kernel bundles must equal clang's byte
# for byte.
check sibling-builders python3 "$FLASHIR_ROOT/scripts/check-sibling-builders.py"
gccBuild() (
  dir="$FLASHIR_BUILD_DIR-gcc"
  # gcc's -fuse-ld=lld finds ld.lld on PATH: LLVM 22's.
  export PATH="$LLVM_PREFIX/bin:$PATH"
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$FLASHIR_ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ -DLLVM_USE_LINKER=lld \
      -DFLASHIR_PRECOMPILED_HEADERS=ON \
      -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
      -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" >/dev/null || exit 1
  fi
  cmake --build "$dir" --target flashir-opt flashir-run flashir-bundle || exit 1
  "$LLVM_PREFIX/bin/lit" -q "$dir/test" || exit 1
  out="$dir/bundles"
  rm -rf "$out"
  split='--schedule=attn-import-variants,attn-split-kv{chunk-size=0}'
  for compiler in clang gcc; do
    bin="$FLASHIR_BUILD_DIR/bin"
    [ "$compiler" = gcc ] && bin="$dir/bin"
    o="$out/$compiler"
    "$bin/flashir-bundle" "$FLASHIR_ROOT/bench/gpu/decode_kernels.mlir" \
      -o "$o/decode" >/dev/null &&
      "$bin/flashir-bundle" "$FLASHIR_ROOT/bench/gpu/decode_kernels.mlir" \
        -o "$o/decode-split" "$split" >/dev/null &&
      "$bin/flashir-bundle" "$FLASHIR_ROOT/bench/gpu/prefill_kernels.mlir" \
        -o "$o/prefill" --chips=sm_80,sm_90a >/dev/null &&
      "$bin/flashir-bundle" "$FLASHIR_ROOT/bench/gpu/prefill_kernels.mlir" \
        -o "$o/prefill-split" --chips=sm_80,sm_90a "$split" \
        --split-prefill >/dev/null || exit 1
  done
  # PTX and cubins byte for byte; manifests less their compile times.
  sed -i -E 's/"compile_ms": [0-9.eE+-]+/"compile_ms": 0/' "$out"/*/*/manifest.json &&
    diff -r "$out/clang" "$out/gcc"
)
check gcc gccBuild

section "plan() time (Google Benchmark; reported, not asserted)"
if [ -x "$FLASHIR_BUILD_DIR/bench/planner/flashir-plan-bench" ]; then
  "$FLASHIR_BUILD_DIR/bench/planner/flashir-plan-bench" --benchmark_min_time=0.2 2>&1 |
    grep -E '^(BM_|Run on|CPU)' || true
fi

rm -rf "$results"
echo
echo "(${SECONDS} s in all; each section's start in its heading)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

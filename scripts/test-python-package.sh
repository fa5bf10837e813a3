#!/usr/bin/env bash
# The Python package as pip builds it (pyproject.toml: FlashIR's own CMake-
# driven PEP 517 backend, offline): a wheel with the C library and a
# compiler (a stand-in executable), installed into a fresh target folder and
# imported from there in a clean process. No GPU needed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#!/bin/sh\necho stand-in\n' >"$work/flashir-bundle"
chmod +x "$work/flashir-bundle"
python3 -m pip wheel "$root" -w "$work/wheels" --no-deps -q \
  -C compiler="$work/flashir-bundle"
python3 -m pip install --no-deps -q --target "$work/site" "$work"/wheels/flashir-*.whl
cd "$work"
env -u FLASHIR_COMPILER -u FLASHIR_LIB PYTHONPATH="$work/site" python3 - "$work/site" <<'PY'
import ctypes, os, sys
site = sys.argv[1]
import flashir
from flashir import _lib, jit
assert flashir.__file__.startswith(site), flashir.__file__
assert flashir.__version__, "no version"
lib = _lib._library()  # the packaged libflashir_c.so (no GPU needed to load)
assert lib._name.startswith(site), lib._name
rc = lib.flashirMergeShape(None, None, None)
assert rc == 1 and b"null handle" in lib.flashirLastError(), (rc, lib.flashirLastError())
import flashir.integrations.transformers as integration  # no transformers needed to import
assert integration.__file__.startswith(site), integration.__file__
compiler = jit.find_compiler()
assert compiler == os.path.join(site, "flashir", "bin", "flashir-bundle"), compiler
print("package OK:", flashir.__version__, lib._name, compiler)
PY

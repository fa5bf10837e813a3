#!/usr/bin/env bash
# Regenerates the dialect/pass reference from the ODS into docs/generated/.
# With --check, fails if the committed copy differs from the generated one.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FLASHIR_BUILD_DIR:-$root/build}
cmake --build "$build" --target flashir-doc >/dev/null
mkdir -p "$root/docs/generated"
status=0
for f in Dialects/AttnDialect.md Passes/AttnPasses.md Passes/ConversionPasses.md; do
  out="$root/docs/generated/$(basename "$f")"
  if [ "${1:-}" = --check ]; then
    if ! diff -u "$out" "$build/docs/$f"; then
      echo "docs/generated/$(basename "$f") is stale: run scripts/update-docs.sh" >&2
      status=1
    fi
  else
    cp "$build/docs/$f" "$out"
  fi
done
exit $status

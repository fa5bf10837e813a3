#!/usr/bin/env bash
# Compiles bench/gpu/decode_kernels.mlir into kernel bundles for every
# supported chip (PTX, and cubins where ptxas is found), for
# bench/gpu/gpu_check.sh on the GPU machine:
#   build-gpu/bundle        one CTA per (request, KV head)
#   build-gpu/bundle-split  split-KV: runtime chunks + merge kernel
#   build-gpu/bundle-split-w1, build-gpu/bundle-w2  plain_h32_p16 split-KV
#                           with one warp per CTA and a two-stage ring, and not
#                           split with two warps (the shared-prefix benchmark's
#                           suffix and uncomposed decode)
#   build-gpu/bundle-prefill  tensor-core prefill kernels (sm_80, sm_90a) of
#                           bench/gpu/prefill_kernels.mlir (their 32-row Q
#                           tiles exceed sm_86/sm_89 shared memory)
#   build-gpu/bundle-prefill-sm75  its f16 kernels for sm_75
#   build-gpu/bundle-prefill-sm90a  bench/gpu/prefill_kernels_sm90a.mlir
#                           (tiles beyond sm_80's shared memory)
#   build-gpu/bundle-prefill-wgmma  bench/gpu/prefill_kernels_wgmma.mlir with
#                           design=wgmma (sm_90a's wgmma prefill kernels)
#   build-gpu/bundle-prefill-wgmma-split  the same attentions split-KV
#   build-gpu/cascade-*     the shared-prefix benchmark's kernels alone
#                           (plain_h32_p16 decode: unsplit, -w2, -split-w1;
#                           the fused prefix kernel: mma.sync -prefill and
#                           -prefill-split, wgmma -prefill-wgmma and
#                           -prefill-wgmma-split), small enough to carry
#   build-gpu/bundle-prefill-s1  bench/gpu/prefill_kernels_s1.mlir (one-stage
#                           tiles: one K and one V slot)
#   build-gpu/bundle-prefill-split  its attentions split-KV (+ merge kernels)
#   build-gpu/bundle-shapes(-sm75, -split)  bench/gpu/decode_shapes.mlir
#                           (the decode kernels' head dims, groups, layouts and
#                           variants; f16 for sm_75; split-KV)
#   build-gpu/bundle-prefill-shapes(-sm75)  bench/gpu/prefill_shapes.mlir
#                           (head dims past 64/128/256, groups past 8; its f16
#                           kernels for sm_75)
# The mma.sync prefill bundles take --design=mma-sync: design=auto gives
# sm_90a the wgmma prefill kernel where it serves the attention.
# With --sweep, also sm_90a bundles of the two benchmark kernels in other
# configurations (build-gpu/sweep/<name>; FLASHIR_SWEEP="build-gpu/sweep/*"
# makes gpu_check.sh time them).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
bundle="$FLASHIR_BUILD_DIR/bin/flashir-bundle"
kernels="$FLASHIR_ROOT/bench/gpu/decode_kernels.mlir"
"$bundle" "$kernels" -o "$FLASHIR_ROOT/build-gpu/bundle"
"$bundle" "$kernels" -o "$FLASHIR_ROOT/build-gpu/bundle-split" \
  --schedule='attn-import-variants,attn-split-kv{chunk-size=0}'
# The shared-prefix benchmark's decode kernels at other CTA sizes (warps is a
# module-wide option): the suffixes' split-KV kernel with one warp per CTA
# and two stages (128-key suffixes: a shorter pipeline prologue, and less
# shared memory per CTA, so more of them run beside the prefix kernel) and
# the uncomposed decode with two warps.
awk '/^func.func @plain_h32_p16\(/,/^}/' "$kernels" >"$FLASHIR_ROOT/build-gpu/plain_h32_p16.mlir"
"$bundle" "$FLASHIR_ROOT/build-gpu/plain_h32_p16.mlir" -o "$FLASHIR_ROOT/build-gpu/bundle-split-w1" \
  --chips=sm_80,sm_90a --warps=1 --stages=2 --schedule='attn-import-variants,attn-split-kv{chunk-size=0}'
"$bundle" "$FLASHIR_ROOT/build-gpu/plain_h32_p16.mlir" -o "$FLASHIR_ROOT/build-gpu/bundle-w2" \
  --chips=sm_80,sm_90a --warps=2
rm -rf "$FLASHIR_ROOT/build-gpu/bundle-prefill" "$FLASHIR_ROOT/build-gpu/bundle-prefill-sm75"
"$bundle" "$FLASHIR_ROOT/bench/gpu/prefill_kernels.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle-prefill" --chips=sm_80,sm_90a --design=mma-sync
# The same attentions split-KV (chunks + merge kernels), as prefill kernels.
rm -rf "$FLASHIR_ROOT/build-gpu/bundle-prefill-split"
"$bundle" "$FLASHIR_ROOT/bench/gpu/prefill_kernels.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle-prefill-split" --chips=sm_80,sm_90a --design=mma-sync \
  --schedule='attn-import-variants,attn-split-kv{chunk-size=0}' --split-prefill
# Tiles only sm_90a holds (d256 with Q in shared memory; 3- and 4-stage rings).
rm -rf "$FLASHIR_ROOT/build-gpu/bundle-prefill-sm90a"
"$bundle" "$FLASHIR_ROOT/bench/gpu/prefill_kernels_sm90a.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle-prefill-sm90a" --chips=sm_90a --design=mma-sync
# One-stage tiles (one K and one V slot), sm_80 and sm_90a.
rm -rf "$FLASHIR_ROOT/build-gpu/bundle-prefill-s1"
"$bundle" "$FLASHIR_ROOT/bench/gpu/prefill_kernels_s1.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle-prefill-s1" --chips=sm_80,sm_90a --design=mma-sync
# sm_90a's wgmma prefill kernels (design=wgmma; issue 25).
rm -rf "$FLASHIR_ROOT/build-gpu/bundle-prefill-wgmma"
"$bundle" "$FLASHIR_ROOT/bench/gpu/prefill_kernels_wgmma.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle-prefill-wgmma" --chips=sm_90a --design=wgmma
rm -rf "$FLASHIR_ROOT/build-gpu/bundle-prefill-wgmma-split"
"$bundle" "$FLASHIR_ROOT/bench/gpu/prefill_kernels_wgmma.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle-prefill-wgmma-split" --chips=sm_90a --design=wgmma \
  --schedule='attn-import-variants,attn-split-kv{chunk-size=0}' --split-prefill
# The shared-prefix benchmark's kernels alone (sm_90a).
awk '/^func.func @plain_d128_g4_p16_bf16_fused\(/,/^}/' "$FLASHIR_ROOT/bench/gpu/prefill_kernels.mlir" \
  >"$FLASHIR_ROOT/build-gpu/prefix_fused.mlir"
split_kv='attn-import-variants,attn-split-kv{chunk-size=0}'
cascade="$FLASHIR_ROOT/build-gpu/cascade"
rm -rf "$cascade"-*/
"$bundle" "$FLASHIR_ROOT/build-gpu/plain_h32_p16.mlir" -o "$cascade-decode" --chips=sm_90a
"$bundle" "$FLASHIR_ROOT/build-gpu/plain_h32_p16.mlir" -o "$cascade-decode-w2" --chips=sm_90a --warps=2
"$bundle" "$FLASHIR_ROOT/build-gpu/plain_h32_p16.mlir" -o "$cascade-decode-split-w1" --chips=sm_90a \
  --warps=1 --stages=2 --schedule="$split_kv"
"$bundle" "$FLASHIR_ROOT/build-gpu/prefix_fused.mlir" -o "$cascade-prefill" --chips=sm_90a \
  --design=mma-sync
"$bundle" "$FLASHIR_ROOT/build-gpu/prefix_fused.mlir" -o "$cascade-prefill-split" --chips=sm_90a \
  --design=mma-sync --schedule="$split_kv" --split-prefill
"$bundle" "$FLASHIR_ROOT/build-gpu/prefix_fused.mlir" -o "$cascade-prefill-wgmma" --chips=sm_90a \
  --design=wgmma
"$bundle" "$FLASHIR_ROOT/build-gpu/prefix_fused.mlir" -o "$cascade-prefill-wgmma-split" \
  --chips=sm_90a --design=wgmma --schedule="$split_kv" --split-prefill
# sm_75 has f16 prefill kernels only: its own bundle of the f16 functions.
awk '/^func.func @[a-z0-9_]*_f16[a-z0-9_]*\(/,/^}/' \
  "$FLASHIR_ROOT/bench/gpu/prefill_kernels.mlir" >"$FLASHIR_ROOT/build-gpu/prefill-f16.mlir"
"$bundle" "$FLASHIR_ROOT/build-gpu/prefill-f16.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle-prefill-sm75" --chips=sm_75
# Head dims and groups past 64/128/256 and 8 (bench/gpu/prefill_shapes.mlir),
# its f16 functions for sm_75 too.
shapes="$FLASHIR_ROOT/bench/gpu/prefill_shapes.mlir"
rm -rf "$FLASHIR_ROOT/build-gpu/bundle-prefill-shapes" "$FLASHIR_ROOT/build-gpu/bundle-prefill-shapes-sm75"
"$bundle" "$shapes" -o "$FLASHIR_ROOT/build-gpu/bundle-prefill-shapes" --chips=sm_80,sm_90a --design=mma-sync
# The variants the file defines (rope) go along.
awk '/^(attn\.variant @|func\.func @[a-z0-9_]*_f16[a-z0-9_]*\()/,/^}/' "$shapes" >"$FLASHIR_ROOT/build-gpu/prefill-shapes-f16.mlir"
"$bundle" "$FLASHIR_ROOT/build-gpu/prefill-shapes-f16.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle-prefill-shapes-sm75" --chips=sm_75
# Decode coverage (bench/gpu/decode_shapes.mlir): head dims, groups, pages,
# layouts and variants; its f16 functions (with the file's variants) for
# sm_75; split-KV.
dshapes="$FLASHIR_ROOT/bench/gpu/decode_shapes.mlir"
rm -rf "$FLASHIR_ROOT"/build-gpu/bundle-shapes "$FLASHIR_ROOT"/build-gpu/bundle-shapes-sm75 \
  "$FLASHIR_ROOT"/build-gpu/bundle-shapes-split
"$bundle" "$dshapes" -o "$FLASHIR_ROOT/build-gpu/bundle-shapes" --chips=sm_80,sm_90a
{ awk '/^attn.variant/,/^}/' "$dshapes"
  awk '/^func.func @[a-z0-9_]*_f16[a-z0-9_]*\(/,/^}/' "$dshapes"; } \
  >"$FLASHIR_ROOT/build-gpu/decode-shapes-f16.mlir"
"$bundle" "$FLASHIR_ROOT/build-gpu/decode-shapes-f16.mlir" \
  -o "$FLASHIR_ROOT/build-gpu/bundle-shapes-sm75" --chips=sm_75
"$bundle" "$dshapes" -o "$FLASHIR_ROOT/build-gpu/bundle-shapes-split" --chips=sm_80,sm_90a \
  --schedule='attn-import-variants,attn-split-kv{chunk-size=0}'
if [ "${1:-}" = "--sweep" ]; then
  sweep="$FLASHIR_ROOT/build-gpu/sweep"
  rm -rf "$sweep" && mkdir -p "$sweep"
  # The benchmark kernels only (head dim 128 fits every configuration).
  awk '/^func.func @plain_h(32|64)_p16\(/,/^}/' "$kernels" >"$sweep.mlir"
  while read -r name options; do
    # shellcheck disable=SC2086
    "$bundle" "$sweep.mlir" -o "$sweep/$name" -chips=sm_90a $options
  done <<'CONFIGS'
outer-w4s3 -heads-innermost=false
inner-w4s2 -warps=4 -stages=2
inner-w8s2 -warps=8 -stages=2
tc-cpasync -copy=cp-async
simt-u4s3 -design=simt -unroll=4 -stages=3
CONFIGS
fi

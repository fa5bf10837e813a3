// RUN: flashir-opt %s -split-input-file -attn-import-variants -convert-attn-to-gpu="chip=sm_90a design=wgmma" | FileCheck %s --check-prefixes=CHECK,LAZY

// design=wgmma on sm_90a: the warp-specialized wgmma prefill kernel
// (docs/HopperPrefillPlan.md). 128 query rows on a producer and two
// consumer warpgroups, 128-key K/V tiles in a ring of tensor copies as deep
// as sm_90a's 227 KB hold: 32 KB of Q, 3 x 2 x 32 KB of K/V, 3 x 4
// barriers, 1008 bytes of alignment slack.

!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// CHECK-LABEL: gpu.func @paged_prefill_0
// CHECK-SAME: #attn.launch<kind = prefill, grid = "requests x q_tiles x num_qo_heads", block = 384
// 16-key pages: one box per page, its two 8-key groups over both 64-column
// boxes (the grouped map: column, slot in group, column box, head, group).
// CHECK-SAME: bulk_copy = true, tensor_map_box = [64, 8, 2, 1, 2], dynamic_shared_memory = 230480, q_rows = 128, q_tokens = 128, kv_tile = 128>
// setmaxnreg needs .maxntid.
// CHECK-SAME: nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32
// Thread 0 initialises each slot's full (1 arrival) and empty (one per
// consumer warpgroup) barriers before the CTA barrier.
// CHECK-COUNT-12: nvvm.mbarrier.init %{{.*}}, %c{{[12]}}_i32
// CHECK-NOT: nvvm.mbarrier.init
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: gpu.barrier
// The producer warpgroup gives registers up; its first warp waits for a
// slot to empty, one elected lane expects a tile's bytes, and each lane
// issues one box (a page each: 8 lanes) at (0, 0, 0, KV head, pool row /
// 8), K then V; the page ids of the next tile load first.
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: nvvm.elect.sync -> i1
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<?xi32>
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK: nvvm.bar.warp.sync
// CHECK: arith.cmpi ult, %{{.*}}, %c8
// CHECK: %[[GROUP:.*]] = arith.divui %{{.*}}, %c8_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%c0_i32, %c0_i32, %c0_i32, %{{.*}}, %[[GROUP]]]
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK-NOT: nvvm.cp.async.bulk.tensor.shared.cluster.global
// The consumers take them: Q rows into the swizzled tile, fenced for the
// async proxy, then the warpgroup's own named barrier.
// CHECK: nvvm.setmaxregister  increase 240
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// S = Q.K^T: 8 SS products, the first not accumulating; a tied wait.
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-7: nvvm.wgmma.mma_async {{.*}} D[<f32>, <one>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;", "=f,{{.*}},0,1,2,
// K's slot is released, keys past the end masked, V's tail rows zeroed
// (the consumers' barrier), then O += P.V: 8 RS products from registers
// with V MN-major (trans-b 1).
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $69, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {$0, {{.*}}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;\0A}", "=f,{{.*}},r,r,r,r,l,n,0,1,
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: nvvm.mbarrier.arrive
func.func @paged(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %ix: tensor<?xi32>,
    %last: tensor<?xi32>, %qs: tensor<?x8x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %last : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

// Ragged keys: one box of 128 keys per 64 columns (lanes 0 and 1).
!q  = !attn.ragged_q<heads = 8, head_dim = 128, f16>
!kv = !attn.ragged_kv<heads = 2, head_dim = 128, f16>

// CHECK-LABEL: gpu.func @ragged_prefill_0
// CHECK-SAME: block = 384
// CHECK-SAME: tensor_map_box = [64, 1, 128]
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
// CHECK: arith.cmpi ult, %{{.*}}, %c2
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: wgmma.mma_async {{.*}} A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
func.func @ragged(%k: tensor<?x2x128xf16>, %v: tensor<?x2x128xf16>,
    %ip: tensor<?xi32>, %qs: tensor<?x8x128xf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xf16>, tensor<?x8xf32>) {
  %kv = attn.ragged_kv %k, %v, %ip : tensor<?x2x128xf16>, tensor<?x2x128xf16> -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xf16>, tensor<?x8xf32>
}

// -----

// HND pages of 64 keys: grouped boxes of a tile's 64 keys of one head over
// both column boxes (lanes 0 and 1) at (0, 0, 0, slot / 8, page * Hkv +
// head).
!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 64, layout = hnd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x2x64x128xbf16>

// CHECK-LABEL: gpu.func @hnd_prefill_0
// CHECK-SAME: tensor_map_box = [64, 8, 2, 8, 1]
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: arith.cmpi ult, %{{.*}}, %c2
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%c0_i32, %c0_i32, %c0_i32, %{{.*}}, %{{.*}}]
func.func @hnd(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %ix: tensor<?xi32>,
    %last: tensor<?xi32>, %qs: tensor<?x8x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %last : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

// HND pages of 256 keys hold two tiles: a grouped box of the tile's 16
// groups starting inside the page, at slot group (key % 256) / 8 of page *
// Hkv + head.
!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 256, layout = hnd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x2x256x128xbf16>

// CHECK-LABEL: gpu.func @hnd_two_tiles_prefill_0
// CHECK-SAME: tensor_map_box = [64, 8, 2, 16, 1]
// CHECK: arith.cmpi ult, %{{.*}}, %c1
// CHECK: %[[SLOT:.*]] = arith.remui %{{.*}}, %c256{{.*}} : index
// CHECK: %[[GROUP:.*]] = arith.divui %[[SLOT]], %c8{{.*}} : index
// CHECK: %[[PAGE_HEADS:.*]] = arith.muli %{{.*}}, %c2_i32 : i32
// CHECK: %[[GROUP32:.*]] = arith.index_cast %[[GROUP]] : index to i32
// CHECK: %[[PLANE:.*]] = arith.addi %[[PAGE_HEADS]], %{{.*}} : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%c0_i32, %c0_i32, %c0_i32, %[[GROUP32]], %[[PLANE]]]
func.func @hnd_two_tiles(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %ix: tensor<?xi32>,
    %last: tensor<?xi32>, %qs: tensor<?x8x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %last : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

// What the family does not serve yet goes to the mma.sync prefill kernel
// without a diagnostic: head dims 72 and 96, two KV views, a decode
// attention. (Pages of fewer than 8 keys: wgmma-prefill-gather.mlir.)
!q72  = !attn.ragged_q<heads = 8, head_dim = 72, bf16>
!kv72 = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 72, bf16>
!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!q96  = !attn.ragged_q<heads = 8, head_dim = 96, bf16>
!kv96 = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 96, bf16>

// CHECK-LABEL: gpu.func @fallbacks_prefill_0
// CHECK-SAME: block = 128
// CHECK-NOT: nvvm.setmaxregister
// CHECK-LABEL: gpu.func @fallbacks_prefill_1
// CHECK-SAME: block = 128
// CHECK-NOT: nvvm.setmaxregister
// CHECK-LABEL: gpu.func @fallbacks_prefill_2
// CHECK-SAME: block = 128
// CHECK-NOT: nvvm.setmaxregister
// CHECK-LABEL: gpu.func @fallbacks_decode_3
// CHECK-NOT: nvvm.setmaxregister
func.func @fallbacks(%k72: tensor<?x16x2x72xbf16>, %k: tensor<?x16x2x128xbf16>,
    %k96: tensor<?x16x2x96xbf16>, %ip: tensor<?xi32>,
    %qs72: tensor<?x8x72xbf16>, %qs: tensor<?x8x128xbf16>,
    %qs96: tensor<?x8x96xbf16>)
    -> (tensor<?x8x72xbf16>, tensor<?x8x128xbf16>, tensor<?x8x96xbf16>, tensor<?x8x128xbf16>) {
  %kv72 = attn.paged_kv %k72, %k72, %ip, %ip, %ip : tensor<?x16x2x72xbf16>, tensor<?x16x2x72xbf16> -> !kv72
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : tensor<?x16x2x128xbf16>, tensor<?x16x2x128xbf16> -> !kv
  %kv96 = attn.paged_kv %k96, %k96, %ip, %ip, %ip : tensor<?x16x2x96xbf16>, tensor<?x16x2x96xbf16> -> !kv96
  %q72 = attn.ragged_q %qs72, %ip : tensor<?x8x72xbf16> -> !q72
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %q96 = attn.ragged_q %qs96, %ip : tensor<?x8x96xbf16> -> !q96
  %o0, %l0 = attn.attention @plain(%q72, %kv72)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q72, !kv72
      -> tensor<?x8x72xbf16>, tensor<?x8xf32>
  %o1, %l1 = attn.attention @plain(%q, %kv, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  %o2, %l2 = attn.attention @plain(%q96, %kv96)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q96, !kv96
      -> tensor<?x8x96xbf16>, tensor<?x8xf32>
  %o3, %l3 = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o0, %o1, %o2, %o3 : tensor<?x8x72xbf16>, tensor<?x8x128xbf16>, tensor<?x8x96xbf16>, tensor<?x8x128xbf16>
}

// -----

// Logits and mask hooks run per score in the consumers: soft-cap (tanh,
// relaxed to the hardware approximation) with its scalar parameter.
!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// CHECK-LABEL: gpu.func @softcap_prefill_0
// CHECK-SAME: block = 384
// CHECK: nvvm.wgmma.mma_async
// CHECK: "wgmma.wait_group.sync.aligned 1;"
// CHECK: "tanh.approx.f32 $0, $1;"
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
func.func @softcap(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>,
    %cap: f32) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

// Exactly causal: each of a thread's two rows keeps one bound on its
// visible keys, min(end, position + 1), computed before the key loop; a
// masked tile in the loop (and the first tile, before it) compares every
// key with its row's bound once, signed (a bound <= 0 shows no key).
!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

// CHECK-LABEL: gpu.func @causal_rows_prefill_0
// CHECK-NOT: arith.cmpi sle
// CHECK: nvvm.setmaxregister  increase
// CHECK-NOT: arith.cmpi sle
// The warpgroup's first row's bound (its first masked tile), then the rows'.
// CHECK: %[[WGNEXT:.*]] = arith.addi %{{.*}}, %c1 : index
// CHECK-NEXT: arith.minsi %[[END:.*]], %[[WGNEXT]] : index
// CHECK: %[[NEXT0:.*]] = arith.addi %{{.*}}, %c1 : index
// CHECK-NEXT: %[[BOUND0:.*]] = arith.minsi %[[END]], %[[NEXT0]] : index
// CHECK: %[[NEXT1:.*]] = arith.addi %{{.*}}, %c1 : index
// CHECK-NEXT: %[[BOUND1:.*]] = arith.minsi %[[END]], %[[NEXT1]] : index
// CHECK-NOT: arith.cmpi sle
// CHECK: scf.for
// CHECK-NOT: arith.cmpi {{sle|sgt}}
// CHECK: arith.cmpi slt, %{{.*}}, %[[BOUND0]] : index
// CHECK-NOT: arith.cmpi sle
// CHECK: arith.cmpi slt, %{{.*}}, %[[BOUND1]] : index
// CHECK-NOT: arith.cmpi sle
// CHECK: gpu.return
func.func @causal_rows(%k: !pool, %v: !pool, %ip: tensor<?xi32>, %ix: tensor<?xi32>,
    %last: tensor<?xi32>, %qs: tensor<?x8x128xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %v, %ip, %ix, %last : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %qo : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// -----

// Exactly causal, each consumer warpgroup decides which tiles mask from its
// own first row: before the key loop, the first tile ending past min(end,
// that row's position + 1); in the loop one compare per tile. Head dim 256
// (64-key tiles under 128 rows: the second warpgroup masks one diagonal
// tile instead of two) and 128 unfused; at head dim 64 with two consumers
// (here a gathered kernel: pages of 5 keys) the CTA-uniform test, the
// tile's end against the CTA's first row's position, stays.
!q256c  = !attn.ragged_q<heads = 8, head_dim = 256, bf16>
!kv256c = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
!pool256c = tensor<?x16x2x256xbf16>

// CHECK-LABEL: gpu.func @warpgroup_masks_prefill_0
// CHECK: nvvm.setmaxregister  increase
// CHECK: %[[SEEN:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[AHEAD:.*]] = arith.subi %[[SEEN]], %{{.*}} : index
// CHECK-NEXT: %[[SPAN:.*]] = arith.maxsi %[[AHEAD]], %c0 : index
// CHECK-NEXT: arith.constant 64 : index
// CHECK-NEXT: %[[FROM:.*]] = arith.divui %[[SPAN]], %{{.*}} : index
// CHECK-NOT: arith.cmpi sgt
// CHECK: scf.for
// CHECK-NOT: arith.cmpi sgt
// CHECK: arith.cmpi uge, %{{.*}}, %[[FROM]] : index
// CHECK-NOT: arith.cmpi sgt
// CHECK: gpu.return
func.func @warpgroup_masks(%k: !pool256c, %ip: tensor<?xi32>,
    %qs: tensor<?x8x256xbf16>) -> (tensor<?x8x256xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool256c, !pool256c -> !kv256c
  %q = attn.ragged_q %qs, %ip : tensor<?x8x256xbf16> -> !q256c
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q256c, !kv256c
      -> tensor<?x8x256xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x256xbf16>, tensor<?x8xf32>
}

// CHECK-LABEL: gpu.func @cta_masks_prefill_{{[0-9]+}}
// CHECK-SAME: block = 384
// CHECK-SAME: kv_tile = 128
// CHECK: nvvm.setmaxregister  increase
// CHECK: scf.for
// CHECK: arith.cmpi sgt, %{{.*}}, %{{.*}} : index
// CHECK: gpu.return
func.func @cta_masks(%k: tensor<?x5x2x64xbf16>, %ip: tensor<?xi32>,
    %qs: tensor<?x8x64xbf16>) -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip
      : tensor<?x5x2x64xbf16>, tensor<?x5x2x64xbf16>
      -> !attn.paged_kv<page_size = 5, layout = nhd, heads = 2, head_dim = 64, bf16>
  %q = attn.ragged_q %qs, %ip : tensor<?x8x64xbf16> -> !attn.ragged_q<heads = 8, head_dim = 64, bf16>
  %o, %l = attn.attention @causal(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>}
      : !attn.ragged_q<heads = 8, head_dim = 64, bf16>,
        !attn.paged_kv<page_size = 5, layout = nhd, heads = 2, head_dim = 64, bf16>
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

// -----

// Above head dim 128 the softmax keeps its row maxima lazily: in the key
// loop, once S_j is waited for, each of a thread's two rows moves its
// maximum only when the tile's exceeds it by more than 8 (a factor 2^8),
// and the warp's vote on either row moving decides, after P.V's wait,
// whether O is rescaled; at 128 and below every tile rescales O.
!q128  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv128 = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool128 = tensor<?x16x2x128xbf16>
!q256  = !attn.ragged_q<heads = 8, head_dim = 256, bf16>
!kv256 = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 256, bf16>
!pool256 = tensor<?x16x2x256xbf16>

// LAZY-LABEL: gpu.func @eager_d128_prefill_0
// LAZY-NOT: nvvm.vote.sync
// LAZY: "wgmma.wait_group.sync.aligned 1;"
// LAZY-NOT: nvvm.vote.sync
// LAZY: "wgmma.wait_group.sync.aligned 0;"
// LAZY: nvvm.mbarrier.arrive
// LAZY-NOT: scf.if
// LAZY-COUNT-64: arith.mulf %{{.*}}, %{{.*}} : f32
// LAZY-NEXT: llvm.mlir.undef
// LAZY-NOT: nvvm.vote.sync
// LAZY-LABEL: gpu.func @lazy_d256_prefill_1
// LAZY: "wgmma.wait_group.sync.aligned 1;"
// LAZY: %[[LIMIT0:.*]] = arith.addf %{{.*}}, %cst{{.*}} : f32
// LAZY-NEXT: %[[UP0:.*]] = arith.cmpf ogt, %[[MAX0:.*]], %[[LIMIT0]] : f32
// LAZY-NEXT: arith.select %[[UP0]], %[[MAX0]], %{{.*}} : f32
// LAZY: %[[LIMIT1:.*]] = arith.addf %{{.*}}, %cst{{.*}} : f32
// LAZY-NEXT: %[[UP1:.*]] = arith.cmpf ogt, %[[MAX1:.*]], %[[LIMIT1]] : f32
// LAZY-NEXT: %[[EITHER:.*]] = arith.ori %[[UP0]], %[[UP1]] : i1
// LAZY-NEXT: arith.select %[[UP1]], %[[MAX1]], %{{.*}} : f32
// LAZY: %[[GROWS:.*]] = nvvm.vote.sync  any %{{.*}}, %[[EITHER]] -> i1
// LAZY: "wgmma.wait_group.sync.aligned 0;"
// LAZY: nvvm.mbarrier.arrive
// LAZY: scf.if %[[GROWS]] -> (!llvm.struct<(f32,
// LAZY-COUNT-128: arith.mulf %{{.*}}, %{{.*}} : f32
// LAZY-NEXT: llvm.mlir.undef
// LAZY: } else {
// LAZY-NEXT: scf.yield %{{.*}} : !llvm.struct<(f32,
func.func @eager_d128(%k: !pool128, %ip: tensor<?xi32>,
    %qs: tensor<?x8x128xbf16>) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool128, !pool128 -> !kv128
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q128
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q128, !kv128
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}
func.func @lazy_d256(%k: !pool256, %ip: tensor<?xi32>,
    %qs: tensor<?x8x256xbf16>) -> (tensor<?x8x256xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool256, !pool256 -> !kv256
  %q = attn.ragged_q %qs, %ip : tensor<?x8x256xbf16> -> !q256
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 64, kv = 64, warps = 4, stages = 2>} : !q256, !kv256
      -> tensor<?x8x256xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x256xbf16>, tensor<?x8xf32>
}

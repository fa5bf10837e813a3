// RUN: flashir-opt %s -attn-import-variants "-convert-attn-to-gpu=chip=sm_90a design=wgmma" | FileCheck %s
// RUN: flashir-opt %s -attn-import-variants -attn-split-kv=chunk-size=0 "-convert-attn-to-gpu=chip=sm_90a design=wgmma split-prefill=true" | FileCheck %s --check-prefix=SPLIT
// RUN: flashir-opt %s -attn-import-variants -convert-attn-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=AUTO

// Query, key and output hooks and the sigmoid reduction in the wgmma
// prefill kernel (design=wgmma).

!q  = !attn.ragged_q<heads = 8, head_dim = 128, bf16>
!kv = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 128, bf16>
!pool = tensor<?x16x2x128xbf16>

attn.variant @cos_key reduction softmax params(theta : f32 scalar) {
  key(%x: f32, %xr: f32, %d: index, %pos: index, %head: index, %t: f32) {
    %p = arith.index_cast %pos : index to i32
    %pf = arith.sitofp %p : i32 to f32
    %a = arith.mulf %pf, %t : f32
    %c = math.cos %a : f32
    %y = arith.mulf %x, %c : f32
    attn.yield %y : f32
  }
}

attn.variant @sin_query reduction softmax params(theta : f32 scalar) {
  query(%x: f32, %xr: f32, %d: index, %pos: index, %head: index, %t: f32) {
    %p = arith.index_cast %pos : index to i32
    %pf = arith.sitofp %p : i32 to f32
    %a = arith.mulf %pf, %t : f32
    %s = math.sin %a : f32
    %y = arith.mulf %xr, %s : f32
    attn.yield %y : f32
  }
}

attn.variant @halved_out reduction softmax {
  output(%o: f32, %d: index, %head: index) {
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %o, %half : f32
    attn.yield %r : f32
  }
}

// A landed K tile is hooked in place by the 256 consumer threads (1024
// units of a 16-byte chunk and its partner 64 columns away), fenced for the
// async proxy and passed through the consumers' barrier before Q.K^T reads
// it.
// CHECK-LABEL: gpu.func @key_hook_prefill_0
// CHECK-SAME: block = 384
// CHECK: nvvm.setmaxregister  increase 240
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: scf.for %{{.*}} = %{{.*}} to %c1024 step %c256 {
// CHECK: vector.load %view[%{{.*}}] {{.*}} vector<8xbf16>
// CHECK: vector.load %view[%{{.*}}] {{.*}} vector<8xbf16>
// CHECK: llvm.nvvm.cos.approx.f
// CHECK: vector.store %{{.*}}, %view
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.mma_async
func.func @key_hook(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>,
    %t: f32) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @cos_key(%q, %kv) params(%t : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// Q rows are hooked as they are loaded (the piece and its partner from
// global memory), before they enter the swizzled Q tile.
// CHECK-LABEL: gpu.func @query_hook_prefill_1
// CHECK: nvvm.setmaxregister  increase 240
// CHECK: vector.load %arg0[{{.*}}] {{.*}} vector<8xbf16>
// CHECK: vector.load %arg0[{{.*}}] {{.*}} vector<8xbf16>
// CHECK: llvm.nvvm.sin.approx.f
// CHECK: vector.store %{{.*}}, %view
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.wgmma.mma_async
func.func @query_hook(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>,
    %t: f32) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @sin_query(%q, %kv) params(%t : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// Sigmoid: weights 1 / (1 + 2^-x) with no row maximum (no maxnumf, no O
// rescale); O leaves unnormalised (O / l * l).
// CHECK-LABEL: gpu.func @sigmoid_rows_prefill_2
// CHECK-NOT: arith.maxnumf
// CHECK: nvvm.rcp.approx.ftz.f
// CHECK-NOT: arith.maxnumf
// CHECK: math.log
// CHECK-NOT: arith.maxnumf
// CHECK-LABEL: gpu.func @output_hook_prefill_3
func.func @sigmoid_rows(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>,
    %bias: f32) -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @sigmoid(%q, %kv) params(%bias : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// The output hook runs on O / l in registers, before the rows are staged.
// CHECK: math.log
// CHECK: %[[PAIR:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK: vector.extract %[[PAIR]][0]
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} fastmath<contract> : f32
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>

// Split-KV: a chunk stages final rows where it is its request's only one,
// else the partial state (O / l, the merge kernel applies the hook).
// SPLIT-LABEL: gpu.func @output_hook_prefill_3
// SPLIT: math.log
// SPLIT: %[[PAIR:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf32>
// SPLIT: arith.mulf %{{.*}}, %cst{{.*}} fastmath<contract> : f32
// SPLIT: %[[FINAL:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf32>
// SPLIT-NEXT: arith.select %{{.*}}, %[[FINAL]], %[[PAIR]] : vector<2xf32>
func.func @output_hook(%k: !pool, %ip: tensor<?xi32>, %qs: tensor<?x8x128xbf16>)
    -> (tensor<?x8x128xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k, %k, %ip, %ip, %ip : !pool, !pool -> !kv
  %q = attn.ragged_q %qs, %ip : tensor<?x8x128xbf16> -> !q
  %o, %l = attn.attention @halved_out(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64,
       tiles = #attn.tiles<q = 128, kv = 64, warps = 4, stages = 2>} : !q, !kv
      -> tensor<?x8x128xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x128xbf16>, tensor<?x8xf32>
}

// design=auto on sm_90a leaves query and key hooks to the mma.sync prefill
// kernel (faster there); sigmoid and output hooks take the wgmma one.
// AUTO-LABEL: gpu.func @key_hook_prefill_0
// AUTO-SAME: block = 128
// AUTO-NOT: nvvm.setmaxregister
// AUTO-LABEL: gpu.func @query_hook_prefill_1
// AUTO-SAME: block = 128
// AUTO-LABEL: gpu.func @sigmoid_rows_prefill_2
// AUTO-SAME: block = 384
// AUTO: nvvm.setmaxregister
// AUTO-LABEL: gpu.func @output_hook_prefill_3
// AUTO-SAME: block = 384

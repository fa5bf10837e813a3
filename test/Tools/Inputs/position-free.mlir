// Variants with and without positions (bundle-position-free.test).
!q    = !attn.ragged_q<heads = 8, head_dim = 64, bf16>
!kv   = !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 64, bf16>
!pool = tensor<?x16x2x64xbf16>

// A soft-cap without a mask: position-free.
attn.variant @capped reduction softmax params(cap : f32 scalar) {
  logits(%s: f32, %qpos: index, %kpos: index, %head: index, %cap: f32) {
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %r = arith.mulf %t, %cap : f32
    attn.yield %r : f32
  }
}

// A logits hook that reads a position: not position-free.
attn.variant @distance reduction softmax {
  logits(%s: f32, %qpos: index, %kpos: index, %head: index) {
    %k = arith.index_cast %kpos : index to i32
    %f = arith.sitofp %k : i32 to f32
    %r = arith.addf %s, %f : f32
    attn.yield %r : f32
  }
}

func.func @capped_decode(%k_pool: !pool, %v_pool: !pool, %indptr: tensor<?xi32>,
                         %indices: tensor<?xi32>, %last: tensor<?xi32>,
                         %queries: tensor<?x8x64xbf16>, %qo: tensor<?xi32>, %cap: f32)
    -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k_pool, %v_pool, %indptr, %indices, %last : !pool, !pool -> !kv
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xbf16> -> !q
  %o, %l = attn.attention @capped(%q, %kv) params(%cap : f32)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

func.func @distance_decode(%k_pool: !pool, %v_pool: !pool, %indptr: tensor<?xi32>,
                           %indices: tensor<?xi32>, %last: tensor<?xi32>,
                           %queries: tensor<?x8x64xbf16>, %qo: tensor<?xi32>)
    -> (tensor<?x8x64xbf16>, tensor<?x8xf32>) {
  %kv = attn.paged_kv %k_pool, %v_pool, %indptr, %indices, %last : !pool, !pool -> !kv
  %q = attn.ragged_q %queries, %qo : tensor<?x8x64xbf16> -> !q
  %o, %l = attn.attention @distance(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x8x64xbf16>, tensor<?x8xf32>
  return %o, %l : tensor<?x8x64xbf16>, tensor<?x8xf32>
}

// Verifier rules of the scheduling forms (chunks, attended views, shared
// prefixes, chunked states).
// RUN: flashir-opt %s -split-input-file -verify-diagnostics

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.ragged_kv<heads = 2, head_dim = 8, f16>

// attended_views needs one flag per view.
func.func @attended_size(%q: !q, %kv: !kv) {
  // expected-error @+1 {{'attn.attention' op attended_views has 2 entries, but there are 1 views}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64,
       attended_views = array<i1: true, false>} : !q, !kv
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.ragged_kv<heads = 2, head_dim = 8, f16>

// Attending nothing is not an attention.
func.func @attended_none(%q: !q, %kv: !kv) {
  // expected-error @+1 {{'attn.attention' op attended_views must attend at least one view}}
  %o, %l = attn.attention @plain(%q, %kv, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64,
       attended_views = array<i1: false, false>} : !q, !kv, !kv
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.ragged_kv<heads = 2, head_dim = 8, f16>

// Chunks return one chunked state.
func.func @chunks_result(%q: !q, %kv: !kv, %a: tensor<?xi32>) {
  // expected-error @+1 {{'attn.attention' op an attention split into chunks returns one !attn.chunked_state}}
  %o, %l = attn.attention @plain(%q, %kv) chunks(%a, %a, %a)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.ragged_kv<heads = 2, head_dim = 8, f16>

// A chunked state of another shape or variant.
func.func @chunks_mismatch(%q: !q, %kv: !kv, %a: tensor<?xi32>) {
  // expected-error @+1 {{'attn.attention' op result '!attn.chunked_state<heads = 4, head_dim = 8, @causal>' does not match the attention (4 heads of dim 8, variant 'plain')}}
  %p = attn.attention @plain(%q, %kv) chunks(%a, %a, %a)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> !attn.chunked_state<heads = 4, head_dim = 8, @causal>
  return
}

// -----

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.ragged_kv<heads = 2, head_dim = 8, f16>

// A chunked state needs chunks.
func.func @chunked_without_chunks(%q: !q, %kv: !kv) {
  // expected-error @+1 {{'attn.attention' op an !attn.chunked_state result needs chunks(...)}}
  %p = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> !attn.chunked_state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

attn.variant @sparse reduction sparsemax {}

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.ragged_kv<heads = 2, head_dim = 8, f16>

// Chunks are states: a reduction without merge rule cannot be split.
func.func @chunks_sparse(%q: !q, %kv: !kv, %a: tensor<?xi32>) {
  // expected-error @+1 {{'attn.attention' op variant 'sparse' has reduction 'sparsemax', which has no merge rule}}
  %p = attn.attention @sparse(%q, %kv) chunks(%a, %a, %a)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64} : !q, !kv
      -> !attn.chunked_state<heads = 4, head_dim = 8, @sparse>
  return
}

// -----

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>

// merge_chunks keeps the variant and shape.
func.func @merge_chunks_mismatch(%p: !attn.chunked_state<heads = 4, head_dim = 8, @plain>,
                                 %q: !q, %ci: tensor<?xi32>) {
  // expected-error @+1 {{'attn.merge_chunks' op result '!attn.state<heads = 4, head_dim = 8, @causal>' does not match the chunks '!attn.chunked_state<heads = 4, head_dim = 8, @plain>'}}
  %s = attn.merge_chunks %p, %q, %ci
      : !attn.chunked_state<heads = 4, head_dim = 8, @plain>, !q
      -> !attn.state<heads = 4, head_dim = 8, @causal>
  return
}

// -----

// ... and its queries must match the chunks.
func.func @merge_chunks_queries(%p: !attn.chunked_state<heads = 4, head_dim = 8, @plain>,
                                %q: !attn.ragged_q<heads = 2, head_dim = 8, f16>,
                                %ci: tensor<?xi32>) {
  // expected-error @+1 {{'attn.merge_chunks' op queries '!attn.ragged_q<heads = 2, head_dim = 8, f16>' do not match the chunks '!attn.chunked_state<heads = 4, head_dim = 8, @plain>'}}
  %s = attn.merge_chunks %p, %q, %ci
      : !attn.chunked_state<heads = 4, head_dim = 8, @plain>,
        !attn.ragged_q<heads = 2, head_dim = 8, f16>
      -> !attn.state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

!kv = !attn.ragged_kv<heads = 2, head_dim = 8, f16>

// Chunks have at least one key.
func.func @uniform_chunks_size(%kv: !kv) {
  // expected-error @+1 {{'attn.uniform_chunks' op chunk_size must be >= 1, got 0}}
  %a, %b, %c = attn.uniform_chunks(%kv) {chunk_size = 0 : i64} : !kv
      -> tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

// The shared prefix view checks its pools like any paged view.
func.func @shared_pool(%k: tensor<?x8x2x8xf16>, %idx: tensor<?xi32>, %n: index) {
  // expected-error @+1 {{'attn.shared_paged_kv' op page pool dimension 1 (page_size) is 8, but the view's page_size is 16}}
  %p = attn.shared_paged_kv %k, %k, %idx, %n : tensor<?x8x2x8xf16>, tensor<?x8x2x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

// Chunked state types check their shape like states.
// expected-error @+1 {{heads must be >= 1, got 0}}
func.func @chunked_type(%p: !attn.chunked_state<heads = 0, head_dim = 8, @plain>) {
  return
}

// -----

!q  = !attn.ragged_q<heads = 4, head_dim = 8, f16>
!kv = !attn.ragged_kv<heads = 2, head_dim = 8, f16>

// The three chunk arrays come together (only the generic form can omit one).
func.func @chunks_partial(%q: !q, %kv: !kv, %a: tensor<?xi32>) {
  // expected-error @+1 {{'attn.attention' op chunks need chunk_indptr, chunk_starts and chunk_ends}}
  %p = "attn.attention"(%q, %kv, %a) <{num_kv_heads = 2 : i64, num_qo_heads = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0>, variant = @plain}>
      : (!q, !kv, tensor<?xi32>) -> !attn.chunked_state<heads = 4, head_dim = 8, @plain>
  return
}

// RUN: flashir-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// #attn.launch, the kernel ABI on generated kernels: what the GPU conversion
// writes round-trips, defaults (0, false, absent) are elided, and a split
// kernel names its merge kernel.

// CHECK-LABEL: func.func @split
// CHECK-SAME: attn.launch = #attn.launch<kind = decode, grid = "chunks x num_kv_heads", block = 128, variant = @plain, args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices", "last_page_len", "chunk_indptr", "chunk_request", "chunk_starts", "chunk_ends", "chunk_order", "partial_o", "partial_lse", "out", "lse", "kv_maps", "cap"], merge_kernel = @merge, stages = 3, tensor_cores = true, tensor_map_box = [64, 1, 16], completes_after_predecessor = true>
// CHECK-LABEL: func.func @merge
// CHECK-SAME: #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = ["qo_indptr", "chunk_indptr", "partial_o", "partial_lse", "out", "lse"], programmatic_wait = true>
// CHECK-LABEL: func.func @persistent_prefill
// CHECK-SAME: q_rows = 128, q_tokens = 128, kv_tile = 128, persistent = true>
module {
  func.func @split(%a0: i32, %a1: i32, %a2: i32, %a3: i32, %a4: i32,
      %a5: i32, %a6: i32, %a7: i32, %a8: i32, %a9: i32, %a10: i32, %a11: i32,
      %a12: i32, %a13: i32, %a14: i32, %a15: i32, %a16: i32, %cap: f32)
      attributes {attn.launch = #attn.launch<kind = decode,
        grid = "chunks x num_kv_heads", block = 128, variant = @plain,
        args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices",
                "last_page_len", "chunk_indptr", "chunk_request",
                "chunk_starts", "chunk_ends", "chunk_order", "partial_o",
                "partial_lse", "out", "lse", "kv_maps", "cap"],
        merge_kernel = @merge, stages = 3, tensor_cores = true,
        tensor_map_box = [64, 1, 16], bulk_copy = false,
        completes_after_predecessor = true>} {
    return
  }
  func.func @merge(%a0: i32, %a1: i32, %a2: i32, %a3: i32, %a4: i32,
      %a5: i32) attributes {attn.launch = #attn.launch<kind = merge,
        grid = "requests x num_qo_heads", block = 32, variant = @plain,
        args = ["qo_indptr", "chunk_indptr", "partial_o", "partial_lse",
                "out", "lse"], programmatic_wait = true>} {
    return
  }
  func.func @persistent_prefill(%a0: i32, %a1: i32, %a2: i32, %a3: i32,
      %a4: i32, %a5: i32, %a6: i32, %a7: i32, %a8: i32, %a9: i32)
      attributes {attn.launch = #attn.launch<
        kind = prefill, grid = "requests x q_tiles x num_qo_heads",
        block = 384, variant = @plain,
        args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices",
                "last_page_len", "out", "lse", "kv_maps"],
        q_rows = 128, q_tokens = 128, kv_tile = 128, persistent = true>} {
    return
  }
}

// -----

// expected-error @+1 {{launch grid 'requests x num_heads' is not one of the ABI's}}
func.func @bad_grid() attributes {attn.launch = #attn.launch<kind = merge, grid = "requests x num_heads", block = 32, variant = @plain, args = []>} {
  return
}

// -----

// expected-error @+1 {{launch block must be 1..1024 threads, got 2048}}
func.func @bad_block() attributes {attn.launch = #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 2048, variant = @plain, args = []>} {
  return
}

// -----

// expected-error @+1 {{launch args must be strings, got 3 : i64}}
func.func @bad_arg() attributes {attn.launch = #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = [3]>} {
  return
}

// -----

// expected-error @+1 {{launch of a merge kernel: argument 1 is 'partial_o', expected 'chunk_indptr'}}
func.func @misordered() attributes {attn.launch = #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = ["qo_indptr", "partial_o", "chunk_indptr", "partial_lse", "out", "lse"]>} {
  return
}

// -----

// expected-error @+1 {{launch of a decode kernel: grid 'requests x num_qo_heads' does not fit a decode kernel}}
func.func @decode_per_query_head() attributes {attn.launch = #attn.launch<kind = decode, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = []>} {
  return
}

// -----

// expected-error @+1 {{launch of a decode kernel: a split kernel must name its merge kernel}}
func.func @split_without_merge() attributes {attn.launch = #attn.launch<kind = decode, grid = "chunks x num_kv_heads", block = 128, variant = @plain, args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices", "last_page_len", "chunk_indptr", "chunk_request", "chunk_starts", "chunk_ends", "chunk_order", "partial_o", "partial_lse", "out", "lse", "kv_maps"]>} {
  return
}

// -----

// expected-error @+1 {{launch of a prefill kernel: a prefill kernel needs q_tokens >= 1}}
func.func @prefill_without_tile() attributes {attn.launch = #attn.launch<kind = prefill, grid = "requests x q_tiles x num_qo_heads", block = 128, variant = @plain, args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices", "last_page_len", "out", "lse", "kv_maps"]>} {
  return
}

// -----

// expected-error @+1 {{launch stages must be >= 0, got -1}}
func.func @negative_stages() attributes {attn.launch = #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = ["qo_indptr", "chunk_indptr", "partial_o", "partial_lse", "out", "lse"], stages = -1>} {
  return
}

// -----

// expected-error @+1 {{launch tensor_map_box needs three or five extents in 1..256}}
func.func @bad_box() attributes {attn.launch = #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = ["qo_indptr", "chunk_indptr", "partial_o", "partial_lse", "out", "lse"], tensor_map_box = [64, 0, 16]>} {
  return
}

// -----

// expected-error @+1 {{launch tensor_map_box of five extents groups 8 keys (second extent), got 16}}
func.func @bad_group_box() attributes {attn.launch = #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = ["qo_indptr", "chunk_indptr", "partial_o", "partial_lse", "out", "lse"], tensor_map_box = [64, 16, 2, 1, 2]>} {
  return
}

// -----

// expected-error @+1 {{launch of a decode kernel cannot be persistent (only prefill kernels' CTAs walk their grid)}}
func.func @persistent_decode() attributes {attn.launch = #attn.launch<kind = decode, grid = "requests x num_kv_heads", block = 128, variant = @plain, args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices", "last_page_len", "out", "lse", "kv_maps"], persistent = true>} {
  return
}

// -----

// expected-error @+1 {{'attn.launch' must be an #attn.launch attribute}}
func.func @not_launch() attributes {attn.launch = {grid = "requests x num_kv_heads"}} {
  return
}

// -----

// expected-error @+1 {{'attn.launch' belongs on a kernel function}}
module attributes {attn.launch = #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = ["qo_indptr", "chunk_indptr", "partial_o", "partial_lse", "out", "lse"]>} {
}

// -----

// expected-error @+1 {{'attn.launch' names 6 arguments; the kernel takes 1}}
func.func @arity(%a: i32) attributes {attn.launch = #attn.launch<kind = merge, grid = "requests x num_qo_heads", block = 32, variant = @plain, args = ["qo_indptr", "chunk_indptr", "partial_o", "partial_lse", "out", "lse"]>} {
  return
}

// -----

func.func @other() {
  return
}
// expected-error @+1 {{'attn.launch' names merge kernel @other, which is not a merge kernel of this module}}
func.func @split(%a0: i32, %a1: i32, %a2: i32, %a3: i32, %a4: i32,
    %a5: i32, %a6: i32, %a7: i32, %a8: i32, %a9: i32, %a10: i32, %a11: i32,
    %a12: i32, %a13: i32, %a14: i32, %a15: i32, %a16: i32)
    attributes {attn.launch = #attn.launch<kind = decode,
      grid = "chunks x num_kv_heads", block = 128, variant = @plain,
      args = ["q", "qo_indptr", "k_pool", "v_pool", "indptr", "indices",
              "last_page_len", "chunk_indptr", "chunk_request",
              "chunk_starts", "chunk_ends", "chunk_order", "partial_o",
              "partial_lse", "out", "lse", "kv_maps"],
      merge_kernel = @other>} {
  return
}

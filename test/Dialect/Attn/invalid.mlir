// RUN: flashir-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// #attn.param attribute verifier
//===----------------------------------------------------------------------===//

// A variant parameter needs a non-empty name.
// expected-error @+1 {{variant parameter name must not be empty}}
func.func @f() attributes {p = #attn.param<"", i32, scalar>} { return }

// -----

// A buffer parameter must be a ranked tensor.
// expected-error @+1 {{buffer parameter 'b' must have a ranked tensor type, got 'f32'}}
func.func @f() attributes {p = #attn.param<"b", f32, buffer>} { return }

// -----

// A non-buffer parameter must be an integer, index or float.
// expected-error @+1 {{per_request parameter 'w' must have an integer, index or float type, got 'tensor<?xi32>'}}
func.func @f() attributes {p = #attn.param<"w", tensor<?xi32>, per_request>} { return }

// -----

// An empty (quoted) parameter name in a variant is caught by the attribute verifier.
// expected-error @+1 {{variant parameter name must not be empty}}
attn.variant @v reduction softmax params("" : i32 scalar) {}

// -----

// The attribute verifier also runs on parameters declared by a variant.
// expected-error @+1 {{scalar parameter 'c' must have an integer, index or float type, got 'vector<2xf32>'}}
attn.variant @v reduction softmax params(c : vector<2xf32> scalar) {}

// -----

//===----------------------------------------------------------------------===//
// Type verifiers
//===----------------------------------------------------------------------===//

// paged_kv: page_size >= 1.
// expected-error @+1 {{page_size must be >= 1, got 0}}
func.func @f(%kv: !attn.paged_kv<page_size = 0, layout = nhd, heads = 2, head_dim = 8, f16>) { return }

// -----

// paged_kv: heads >= 1.
// expected-error @+1 {{heads must be >= 1, got 0}}
func.func @f(%kv: !attn.paged_kv<page_size = 16, layout = nhd, heads = 0, head_dim = 8, f16>) { return }

// -----

// ragged_kv: head_dim must be even.
// expected-error @+1 {{head_dim must be an even number in 2..1024 (hooks pair element i with i + head_dim/2), got 7}}
func.func @f(%kv: !attn.ragged_kv<heads = 2, head_dim = 7, f16>) { return }

// -----

// ragged_q: head_dim must be positive.
// expected-error @+1 {{head_dim must be an even number in 2..1024 (hooks pair element i with i + head_dim/2), got 0}}
func.func @f(%q: !attn.ragged_q<heads = 2, head_dim = 0, f16>) { return }

// -----

// ragged_q: element type must be f16, bf16 or f32.
// expected-error @+1 {{element type must be f16, bf16 or f32, got 'i8'}}
func.func @f(%q: !attn.ragged_q<heads = 2, head_dim = 8, i8>) { return }

// -----

// paged_kv: element type must be f16, bf16 or f32.
// expected-error @+1 {{element type must be f16, bf16 or f32, got 'f64'}}
func.func @f(%kv: !attn.paged_kv<page_size = 1, layout = hnd, heads = 2, head_dim = 8, f64>) { return }

// -----

// state: heads >= 1 (negative).
// expected-error @+1 {{heads must be >= 1, got -3}}
func.func @f(%s: !attn.state<heads = -3, head_dim = 8, @plain>) { return }

// -----

// state: head_dim must be even.
// expected-error @+1 {{head_dim must be an even number in 2..1024 (hooks pair element i with i + head_dim/2), got 1}}
func.func @f(%s: !attn.state<heads = 2, head_dim = 1, @plain>) { return }

// -----

//===----------------------------------------------------------------------===//
// attn.variant: custom parser
//===----------------------------------------------------------------------===//

// Unknown reduction kind.
// expected-error @+1 {{unknown reduction 'max'; expected softmax, sigmoid or sparsemax}}
attn.variant @v reduction max {}

// -----

// Unknown parameter kind.
// expected-error @+1 {{unknown parameter kind 'per_token'; expected scalar, per_request, per_head or buffer}}
attn.variant @v reduction softmax params(w : i32 per_token) {}

// -----

attn.variant @v reduction softmax {
  // Unknown hook name.
  // expected-error @+1 {{unknown hook 'value'; expected query, key, logits, mask or output}}
  value(%o: f32, %d: index, %h: index) {
    attn.yield %o : f32
  }
}

// -----

attn.variant @v reduction softmax {
  mask(%q: index, %k: index, %h: index) {
    %t = arith.constant true
    attn.yield %t : i1
  }
  // A hook may be defined only once.
  // expected-error @+1 {{hook 'mask' is defined twice}}
  mask(%q: index, %k: index, %h: index) {
    %t = arith.constant false
    attn.yield %t : i1
  }
}

// -----

attn.variant @v reduction softmax {
  // A hook written without arguments and with `{}` has no block.
  // expected-error @+1 {{hook 'logits' has an empty body}}
  logits() {}
}

// -----

//===----------------------------------------------------------------------===//
// attn.variant: verifiers
//===----------------------------------------------------------------------===//

// Parameter names are unique.
// expected-error @+1 {{'attn.variant' op declares parameter 'w' more than once}}
attn.variant @v reduction softmax params(w : i32 per_request, w : f32 scalar) {}

// -----

// Wrong number of hook block arguments (parameters missing).
// expected-error @+1 {{'attn.variant' op 'mask' hook expects 4 block arguments (3 context + 1 parameters), got 3}}
attn.variant @v reduction softmax params(w : i32 per_request) {
  mask(%q: index, %k: index, %h: index) {
    %t = arith.constant true
    attn.yield %t : i1
  }
}

// -----

// The output hook takes no parameters.
// expected-error @+1 {{'attn.variant' op 'output' hook expects 3 block arguments (3 context + 0 parameters), got 4}}
attn.variant @v reduction softmax params(c : f32 scalar) {
  output(%o: f32, %d: index, %h: index, %c: f32) {
    attn.yield %o : f32
  }
}

// -----

// Wrong type of a context block argument.
// expected-error @+1 {{'attn.variant' op 'query' hook argument #2 must be of type 'index', got 'i32'}}
attn.variant @v reduction softmax {
  query(%x: f32, %xr: f32, %d: i32, %q: index, %h: index) {
    attn.yield %x : f32
  }
}

// -----

// Wrong type of a parameter block argument.
// expected-error @+1 {{'attn.variant' op 'key' hook argument #5 must be of type 'tensor<?xi8>', got 'tensor<?xi32>'}}
attn.variant @v reduction softmax params(bits : tensor<?xi8> buffer) {
  key(%x: f32, %xr: f32, %d: index, %k: index, %h: index, %b: tensor<?xi32>) {
    attn.yield %x : f32
  }
}

// -----

// A hook must be terminated by attn.yield, not another terminator.
// expected-error @+1 {{'attn.variant' op 'mask' hook must end with attn.yield}}
attn.variant @v reduction softmax {
  mask(%q: index, %k: index, %h: index) {
    llvm.unreachable
  }
}

// -----

attn.variant @v reduction softmax {
  mask(%q: index, %k: index, %h: index) {
    %c = arith.constant 1 : i32
    // The mask hook yields an i1 (reported on the yield).
    // expected-error @+1 {{'attn.yield' op 'mask' hook must yield exactly one 'i1'}}
    attn.yield %c : i32
  }
}

// -----

attn.variant @v reduction softmax {
  logits(%s: f32, %q: index, %k: index, %h: index) {
    // A hook yields exactly one value (reported on the yield).
    // expected-error @+1 {{'attn.yield' op 'logits' hook must yield exactly one 'f32'}}
    attn.yield %s, %s : f32, f32
  }
}

// -----

attn.variant @v reduction softmax {
  output(%o: f32, %d: index, %h: index) {
    // Yielding nothing is also rejected (reported on the yield).
    // expected-error @+1 {{'attn.yield' op 'output' hook must yield exactly one 'f32'}}
    attn.yield
  }
}

// -----

//===----------------------------------------------------------------------===//
// Index arrays
//===----------------------------------------------------------------------===//

func.func @f(%queries: tensor<?x2x8xf16>, %qo_indptr: tensor<4xi32>) {
  // Page tables and indptr arrays must be tensor<?xi32>.
  // expected-error @+1 {{'attn.ragged_q' op operand #1 must be tensor<?xi32>, but got 'tensor<4xi32>'}}
  %q = "attn.ragged_q"(%queries, %qo_indptr)
      : (tensor<?x2x8xf16>, tensor<4xi32>)
      -> !attn.ragged_q<heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x16x2x8xf16>, %v: tensor<?x16x2x8xf16>,
             %indptr: tensor<?xi32>, %indices: tensor<?xi64>,
             %last: tensor<?xi32>) {
  // The index array constraint also rejects other element types.
  // expected-error @+1 {{'attn.paged_kv' op operand #3 must be tensor<?xi32>, but got 'tensor<?xi64>'}}
  %kv = "attn.paged_kv"(%k, %v, %indptr, %indices, %last)
      : (tensor<?x16x2x8xf16>, tensor<?x16x2x8xf16>, tensor<?xi32>,
         tensor<?xi64>, tensor<?xi32>)
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.paged_kv
//===----------------------------------------------------------------------===//

func.func @f(%k: tensor<?x16x2x8xf16>, %v: tensor<?x16x2x16xf16>,
             %indptr: tensor<?xi32>, %indices: tensor<?xi32>,
             %last: tensor<?xi32>) {
  // K and V pools must have the same type.
  // expected-error @+1 {{'attn.paged_kv' op K and V page pools must have the same type, got 'tensor<?x16x2x8xf16>' and 'tensor<?x16x2x16xf16>'}}
  %kv = attn.paged_kv %k, %v, %indptr, %indices, %last
      : tensor<?x16x2x8xf16>, tensor<?x16x2x16xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x2x8xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // Pools are 4-D ([pages, page_size, heads, head_dim] for nhd).
  // expected-error @+1 {{'attn.paged_kv' op expects 4-D page pools ([pages, page_size, heads, head_dim] for layout nhd), got 'tensor<?x2x8xf16>'}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x2x8xf16>, tensor<?x2x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x2x16x8x1xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // Pools are 4-D ([pages, heads, page_size, head_dim] for hnd).
  // expected-error @+1 {{'attn.paged_kv' op expects 4-D page pools ([pages, heads, page_size, head_dim] for layout hnd), got 'tensor<?x2x16x8x1xf16>'}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x2x16x8x1xf16>, tensor<?x2x16x8x1xf16>
      -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x16x2x8xbf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // Pool element type must be the view's.
  // expected-error @+1 {{'attn.paged_kv' op page pool element type 'bf16' does not match the view's element type 'f16'}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x16x2x8xbf16>, tensor<?x16x2x8xbf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x32x2x8xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // nhd: dimension 1 is the page size.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 1 (page_size) is 32, but the view's page_size is 16}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x32x2x8xf16>, tensor<?x32x2x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x16x4x8xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // nhd: dimension 2 is the head count.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 2 (heads) is 4, but the view's heads is 2}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x16x4x8xf16>, tensor<?x16x4x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x16x2x16xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // nhd: dimension 3 is head_dim.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 3 (head_dim) is 16, but the view's head_dim is 8}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x16x2x16xf16>, tensor<?x16x2x16xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x?x2x8xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // nhd: the page size dimension must be static.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 1 (page_size) must be static, got 'tensor<?x?x2x8xf16>'}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x?x2x8xf16>, tensor<?x?x2x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x16x?x8xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // nhd: the heads dimension must be static.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 2 (heads) must be static, got 'tensor<?x16x?x8xf16>'}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x16x?x8xf16>, tensor<?x16x?x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x16x2x?xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // nhd: the head_dim dimension must be static.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 3 (head_dim) must be static, got 'tensor<?x16x2x?xf16>'}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x16x2x?xf16>, tensor<?x16x2x?xf16>
      -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x2x8x8xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // hnd: dimension 2 is the page size (an nhd-shaped pool is rejected).
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 2 (page_size) is 8, but the view's page_size is 16}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x2x8x8xf16>, tensor<?x2x8x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x16x16x8xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // hnd: dimension 1 is the head count.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 1 (heads) is 16, but the view's heads is 2}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x16x16x8xf16>, tensor<?x16x16x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x2x16x4xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // hnd: dimension 3 is head_dim.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 3 (head_dim) is 4, but the view's head_dim is 8}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x2x16x4xf16>, tensor<?x2x16x4xf16>
      -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x?x16x8xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // hnd: the heads dimension must be static.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 1 (heads) must be static, got 'tensor<?x?x16x8xf16>'}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x?x16x8xf16>, tensor<?x?x16x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x2x?x8xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // hnd: the page size dimension must be static.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 2 (page_size) must be static, got 'tensor<?x2x?x8xf16>'}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x2x?x8xf16>, tensor<?x2x?x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x2x16x?xf16>, %indptr: tensor<?xi32>,
             %indices: tensor<?xi32>, %last: tensor<?xi32>) {
  // hnd: the head_dim dimension must be static.
  // expected-error @+1 {{'attn.paged_kv' op page pool dimension 3 (head_dim) must be static, got 'tensor<?x2x16x?xf16>'}}
  %kv = attn.paged_kv %k, %k, %indptr, %indices, %last
      : tensor<?x2x16x?xf16>, tensor<?x2x16x?xf16>
      -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 2, head_dim = 8, f16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.ragged_kv / attn.ragged_q
//===----------------------------------------------------------------------===//

func.func @f(%k: tensor<?x2x8xf16>, %v: tensor<?x2x8xbf16>, %indptr: tensor<?xi32>) {
  // Keys and values must have the same type.
  // expected-error @+1 {{'attn.ragged_kv' op keys and values must have the same type, got 'tensor<?x2x8xf16>' and 'tensor<?x2x8xbf16>'}}
  %kv = attn.ragged_kv %k, %v, %indptr : tensor<?x2x8xf16>, tensor<?x2x8xbf16>
      -> !attn.ragged_kv<heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x16xf16>, %indptr: tensor<?xi32>) {
  // Ragged keys are rank 3.
  // expected-error @+1 {{'attn.ragged_kv' op expects keys of rank 3 ([tokens, heads, head_dim]), got 'tensor<?x16xf16>'}}
  %kv = attn.ragged_kv %k, %k, %indptr : tensor<?x16xf16>, tensor<?x16xf16>
      -> !attn.ragged_kv<heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x2x8xf32>, %indptr: tensor<?xi32>) {
  // Ragged keys have the view's element type.
  // expected-error @+1 {{'attn.ragged_kv' op keys element type 'f32' does not match the view's element type 'f16'}}
  %kv = attn.ragged_kv %k, %k, %indptr : tensor<?x2x8xf32>, tensor<?x2x8xf32>
      -> !attn.ragged_kv<heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x3x8xf16>, %indptr: tensor<?xi32>) {
  // Ragged keys: dimension 1 is the head count.
  // expected-error @+1 {{'attn.ragged_kv' op keys dimension 1 (heads) is 3, but the view's heads is 2}}
  %kv = attn.ragged_kv %k, %k, %indptr : tensor<?x3x8xf16>, tensor<?x3x8xf16>
      -> !attn.ragged_kv<heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%k: tensor<?x2x?xf16>, %indptr: tensor<?xi32>) {
  // Ragged keys: head_dim must be static.
  // expected-error @+1 {{'attn.ragged_kv' op keys dimension 2 (head_dim) must be static, got 'tensor<?x2x?xf16>'}}
  %kv = attn.ragged_kv %k, %k, %indptr : tensor<?x2x?xf16>, tensor<?x2x?xf16>
      -> !attn.ragged_kv<heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%queries: tensor<2x8xf16>, %indptr: tensor<?xi32>) {
  // Ragged queries are rank 3.
  // expected-error @+1 {{'attn.ragged_q' op expects queries of rank 3 ([tokens, heads, head_dim]), got 'tensor<2x8xf16>'}}
  %q = attn.ragged_q %queries, %indptr : tensor<2x8xf16>
      -> !attn.ragged_q<heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%queries: tensor<?x2x8xbf16>, %indptr: tensor<?xi32>) {
  // Ragged queries have the view's element type.
  // expected-error @+1 {{'attn.ragged_q' op queries element type 'bf16' does not match the view's element type 'f16'}}
  %q = attn.ragged_q %queries, %indptr : tensor<?x2x8xbf16>
      -> !attn.ragged_q<heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%queries: tensor<?x?x8xf16>, %indptr: tensor<?xi32>) {
  // Ragged queries: heads must be static.
  // expected-error @+1 {{'attn.ragged_q' op queries dimension 1 (heads) must be static, got 'tensor<?x?x8xf16>'}}
  %q = attn.ragged_q %queries, %indptr : tensor<?x?x8xf16>
      -> !attn.ragged_q<heads = 2, head_dim = 8, f16>
  return
}

// -----

func.func @f(%queries: tensor<?x2x64xf16>, %indptr: tensor<?xi32>) {
  // Ragged queries: dimension 2 is head_dim.
  // expected-error @+1 {{'attn.ragged_q' op queries dimension 2 (head_dim) is 64, but the view's head_dim is 8}}
  %q = attn.ragged_q %queries, %indptr : tensor<?x2x64xf16>
      -> !attn.ragged_q<heads = 2, head_dim = 8, f16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: operands and attributes
//===----------------------------------------------------------------------===//

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>) {
  // At least one KV view.
  // expected-error @+1 {{'attn.attention' op expects at least one KV view}}
  %o, %l = "attn.attention"(%q) <{operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0>,
      variant = @plain, num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}>
      : (!attn.ragged_q<heads = 4, head_dim = 8, f16>)
      -> (tensor<?x4x8xf16>, tensor<?x4xf32>)
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // Head counts are positive.
  // expected-error @+1 {{'attn.attention' op head counts must be >= 1, got num_qo_heads = 4, num_kv_heads = 0}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 0 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 3, head_dim = 8, f16>) {
  // Hq must be a multiple of Hkv.
  // expected-error @+1 {{'attn.attention' op num_qo_heads (4) must be a multiple of num_kv_heads (3)}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 3 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 3, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // Hq must be the query heads.
  // expected-error @+1 {{'attn.attention' op num_qo_heads (8) does not match the queries' heads (4)}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 8 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x8x8xf16>, tensor<?x8xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv0: !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
             %kv1: !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 8, f16>) {
  // All views agree on heads, head_dim and element type.
  // expected-error @+1 {{'attn.attention' op KV view #1 ('!attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 8, f16>') disagrees with view #0 ('!attn.ragged_kv<heads = 2, head_dim = 8, f16>') on heads, head_dim or element type}}
  %o, %l = attn.attention @plain(%q, %kv0, %kv1)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
        !attn.paged_kv<page_size = 16, layout = nhd, heads = 1, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 4, head_dim = 8, f16>) {
  // Hkv must be the views' heads.
  // expected-error @+1 {{'attn.attention' op num_kv_heads (2) does not match the KV views' heads (4)}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 4, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 16, f16>) {
  // Query and KV head_dim agree.
  // expected-error @+1 {{'attn.attention' op query head_dim (8) does not match the KV head_dim (16)}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 16, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, bf16>) {
  // Query and KV element types agree.
  // expected-error @+1 {{'attn.attention' op query element type 'f16' does not match the KV element type 'bf16'}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, bf16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // A negative scale is rejected.
  // expected-error @+1 {{'attn.attention' op scale must be a positive finite number, got -5.000000e-01}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, scale = -0.5 : f32}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // A zero scale is rejected.
  // expected-error @+1 {{'attn.attention' op scale must be a positive finite number, got 0.000000e+00}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.0 : f32}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // An infinite scale is rejected.
  // expected-error @+1 {{'attn.attention' op scale must be a positive finite number, got INF}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0x7F800000 : f32}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: results
//===----------------------------------------------------------------------===//

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // Three results are neither (output, lse) nor a state.
  // expected-error @+1 {{'attn.attention' op expects two results (output, lse) or one !attn.state, got 3}}
  %o, %l, %x = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // No result at all.
  // expected-error @+1 {{'attn.attention' op expects two results (output, lse) or one !attn.state, got 0}}
  "attn.attention"(%q, %kv) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>,
      variant = @plain, num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}>
      : (!attn.ragged_q<heads = 4, head_dim = 8, f16>,
         !attn.ragged_kv<heads = 2, head_dim = 8, f16>) -> ()
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // A single result must be a state.
  // expected-error @+1 {{'attn.attention' op a single result must be an !attn.state, got 'tensor<?x4x8xf16>'}}
  %o = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // The state has Hq heads.
  // expected-error @+1 {{'attn.attention' op result state has 2 heads of dim 8, expected 4 of dim 8}}
  %s = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> !attn.state<heads = 2, head_dim = 8, @plain>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // The state has the query head_dim.
  // expected-error @+1 {{'attn.attention' op result state has 4 heads of dim 16, expected 4 of dim 8}}
  %s = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> !attn.state<heads = 4, head_dim = 16, @plain>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // The state is of the op's variant.
  // expected-error @+1 {{'attn.attention' op state type is of variant 'causal', but the op names 'plain'}}
  %s = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> !attn.state<heads = 4, head_dim = 8, @causal>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // The output is a float tensor.
  // expected-error @+1 {{'attn.attention' op output must be a rank-3 float tensor [rows, 4, 8], got 'tensor<?x4x8xi16>'}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xi16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // The output is rank 3.
  // expected-error @+1 {{'attn.attention' op output must be a rank-3 float tensor [rows, 4, 8], got 'tensor<?x32xf16>'}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x32xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // The lse is f32.
  // expected-error @+1 {{'attn.attention' op lse must be a rank-2 f32 tensor [rows, 4], got 'tensor<?x4xf16>'}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf16>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // The lse is a tensor.
  // expected-error @+1 {{'attn.attention' op lse must be a rank-2 f32 tensor [rows, 4], got 'f32'}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, f32
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // Output dimension 1 is Hq.
  // expected-error @+1 {{'attn.attention' op output dimension 1 (heads) is 2, but the attention's heads is 4}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x2x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // Output dimension 2 must be static.
  // expected-error @+1 {{'attn.attention' op output dimension 2 (head_dim) must be static, got 'tensor<?x4x?xf16>'}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x?xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // lse dimension 1 is Hq.
  // expected-error @+1 {{'attn.attention' op lse dimension 1 (heads) is 8, but the attention's heads is 4}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x8xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // Static row counts of output and lse agree.
  // expected-error @+1 {{'attn.attention' op output has 5 rows but lse has 6}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<5x4x8xf16>, tensor<6x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: variant symbol and parameters
//===----------------------------------------------------------------------===//

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // The variant must exist here or in the standard library.
  // expected-error @+1 {{'attn.attention' op 'nope' does not reference a variant defined in this module or in the standard library}}
  %o, %l = attn.attention @nope(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func private @not_a_variant()

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // The symbol must be an attn.variant.
  // expected-error @+1 {{'attn.attention' op 'not_a_variant' does not reference an attn.variant}}
  %o, %l = attn.attention @not_a_variant(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // One operand per declared parameter (standard @soft_cap declares one).
  // expected-error @+1 {{'attn.attention' op variant 'soft_cap' declares 1 parameter(s), but 0 were given}}
  %o, %l = attn.attention @soft_cap(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>, %cap: f64) {
  // A scalar parameter is passed as its declared type.
  // expected-error @+1 {{'attn.attention' op parameter #0 ('cap', scalar) must be of type f32, got 'f64'}}
  %o, %l = attn.attention @soft_cap(%q, %kv) params(%cap : f64)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
             %w: tensor<?xi64>) {
  // A per_request parameter is a 1-D tensor of its element type.
  // expected-error @+1 {{'attn.attention' op parameter #0 ('window_left', per_request) must be of type tensor<?xi32>, got 'tensor<?xi64>'}}
  %o, %l = attn.attention @sliding_window(%q, %kv) params(%w : tensor<?xi64>)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
             %slope: tensor<8xf32>) {
  // A per_head parameter has Hq elements.
  // expected-error @+1 {{'attn.attention' op parameter #0 ('slope', per_head) must be of type tensor<4xf32>, got 'tensor<8xf32>'}}
  %o, %l = attn.attention @alibi(%q, %kv) params(%slope : tensor<8xf32>)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
             %bits: tensor<?xi32>, %row0: tensor<?xi64>, %stride: tensor<?xi64>) {
  // A buffer parameter has exactly its declared tensor type.
  // expected-error @+1 {{'attn.attention' op parameter #0 ('bits', buffer) must be of type tensor<?xi8>, got 'tensor<?xi32>'}}
  %o, %l = attn.attention @custom_mask(%q, %kv)
      params(%bits, %row0, %stride : tensor<?xi32>, tensor<?xi64>, tensor<?xi64>)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

attn.variant @sparse reduction sparsemax {}

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // A sparsemax attention cannot return a state.
  // expected-error @+1 {{'attn.attention' op variant 'sparse' has reduction 'sparsemax', which has no merge rule: its attention states cannot be split, composed or merged}}
  %s = attn.attention @sparse(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> !attn.state<heads = 4, head_dim = 8, @sparse>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.empty_state / attn.make_state
//===----------------------------------------------------------------------===//

func.func @f(%rows: index) {
  // The state type names the op's variant.
  // expected-error @+1 {{'attn.empty_state' op state type is of variant 'plain', but the op names 'causal'}}
  %e = attn.empty_state @causal %rows : !attn.state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

attn.variant @sparse reduction sparsemax {}

func.func @f(%rows: index) {
  // Sparsemax has no empty state.
  // expected-error @+1 {{'attn.empty_state' op variant 'sparse' has reduction 'sparsemax', which has no merge rule: its attention states cannot be split, composed or merged}}
  %e = attn.empty_state @sparse %rows : !attn.state<heads = 4, head_dim = 8, @sparse>
  return
}

// -----

func.func @f(%rows: index) {
  // empty_state also resolves its variant.
  // expected-error @+1 {{'attn.empty_state' op 'missing' does not reference a variant defined in this module or in the standard library}}
  %e = attn.empty_state @missing %rows : !attn.state<heads = 4, head_dim = 8, @missing>
  return
}

// -----

func.func @f(%o: tensor<?x4x8xf16>, %lse: tensor<?x4xf32>) {
  // A state's output is f32.
  // expected-error @+1 {{'attn.make_state' op state output must be f32, got 'tensor<?x4x8xf16>'}}
  %s = attn.make_state @plain %o, %lse : tensor<?x4x8xf16>, tensor<?x4xf32>
      -> !attn.state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

func.func @f(%o: tensor<?x4x8xf32>, %lse: tensor<?x4xf32>) {
  // The state type names the op's variant.
  // expected-error @+1 {{'attn.make_state' op state type is of variant 'causal', but the op names 'plain'}}
  %s = attn.make_state @plain %o, %lse : tensor<?x4x8xf32>, tensor<?x4xf32>
      -> !attn.state<heads = 4, head_dim = 8, @causal>
  return
}

// -----

func.func @f(%o: tensor<?x4x8xf32>, %lse: tensor<?x2xf32>) {
  // make_state checks lse against the state's heads.
  // expected-error @+1 {{'attn.make_state' op lse dimension 1 (heads) is 2, but the state's heads is 4}}
  %s = attn.make_state @plain %o, %lse : tensor<?x4x8xf32>, tensor<?x2xf32>
      -> !attn.state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

attn.variant @sparse reduction sparsemax {}

func.func @f(%o: tensor<?x4x8xf32>, %lse: tensor<?x4xf32>) {
  // Sparsemax states cannot be made.
  // expected-error @+1 {{'attn.make_state' op variant 'sparse' has reduction 'sparsemax', which has no merge rule: its attention states cannot be split, composed or merged}}
  %s = attn.make_state @sparse %o, %lse : tensor<?x4x8xf32>, tensor<?x4xf32>
      -> !attn.state<heads = 4, head_dim = 8, @sparse>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.merge
//===----------------------------------------------------------------------===//

func.func @f() {
  // A merge has at least one operand.
  // expected-error @+1 {{'attn.merge' op expects at least one state}}
  %m = "attn.merge"() : () -> !attn.state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

func.func @f(%a: !attn.state<heads = 4, head_dim = 8, @plain>,
             %b: !attn.state<heads = 4, head_dim = 8, @causal>) {
  // Only states of one variant merge.
  // expected-error @+1 {{'attn.merge' op cannot merge states of different variants: operand #1 is of 'causal', the result of 'plain'}}
  %m = attn.merge %a, %b
      : !attn.state<heads = 4, head_dim = 8, @plain>,
        !attn.state<heads = 4, head_dim = 8, @causal>
      -> !attn.state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

func.func @f(%a: !attn.state<heads = 4, head_dim = 8, @plain>,
             %b: !attn.state<heads = 2, head_dim = 8, @plain>) {
  // Merged states have the same heads.
  // expected-error @+1 {{'attn.merge' op operand #1 has 2 heads of dim 8, but the result has 4 of dim 8}}
  %m = attn.merge %a, %b
      : !attn.state<heads = 4, head_dim = 8, @plain>,
        !attn.state<heads = 2, head_dim = 8, @plain>
      -> !attn.state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

func.func @f(%a: !attn.state<heads = 4, head_dim = 8, @plain>) {
  // The result has the operands' head_dim.
  // expected-error @+1 {{'attn.merge' op operand #0 has 4 heads of dim 8, but the result has 4 of dim 16}}
  %m = attn.merge %a : !attn.state<heads = 4, head_dim = 8, @plain>
      -> !attn.state<heads = 4, head_dim = 16, @plain>
  return
}

// -----

attn.variant @sparse reduction sparsemax {}

func.func @f(%a: !attn.state<heads = 4, head_dim = 8, @sparse>) {
  // Sparsemax states have no merge rule.
  // expected-error @+1 {{'attn.merge' op variant 'sparse' has reduction 'sparsemax', which has no merge rule: its attention states cannot be split, composed or merged}}
  %m = attn.merge %a, %a
      : !attn.state<heads = 4, head_dim = 8, @sparse>,
        !attn.state<heads = 4, head_dim = 8, @sparse>
      -> !attn.state<heads = 4, head_dim = 8, @sparse>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.finalize
//===----------------------------------------------------------------------===//

func.func @f(%s: !attn.state<heads = 4, head_dim = 8, @plain>) {
  // The output has the state's head_dim.
  // expected-error @+1 {{'attn.finalize' op output dimension 2 (head_dim) is 16, but the state's head_dim is 8}}
  %o, %l = attn.finalize %s : !attn.state<heads = 4, head_dim = 8, @plain>
      -> tensor<?x4x16xbf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%s: !attn.state<heads = 4, head_dim = 8, @plain>) {
  // The lse is rank 2.
  // expected-error @+1 {{'attn.finalize' op lse must be a rank-2 f32 tensor [rows, 4], got 'tensor<?xf32>'}}
  %o, %l = attn.finalize %s : !attn.state<heads = 4, head_dim = 8, @plain>
      -> tensor<?x4x8xbf16>, tensor<?xf32>
  return
}

// -----

func.func @f(%s: !attn.state<heads = 4, head_dim = 8, @plain>) {
  // Static rows of output and lse agree.
  // expected-error @+1 {{'attn.finalize' op output has 3 rows but lse has 1}}
  %o, %l = attn.finalize %s : !attn.state<heads = 4, head_dim = 8, @plain>
      -> tensor<3x4x8xf32>, tensor<1x4xf32>
  return
}

// -----

func.func @f(%s: !attn.state<heads = 4, head_dim = 8, @undefined>) {
  // finalize resolves the state's variant.
  // expected-error @+1 {{'attn.finalize' op 'undefined' does not reference a variant defined in this module or in the standard library}}
  %o, %l = attn.finalize %s : !attn.state<heads = 4, head_dim = 8, @undefined>
      -> tensor<?x4x8xf32>, tensor<?x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// #attn.tiles, !attn.chunked_state, attn.shared_paged_kv
//===----------------------------------------------------------------------===//

// q tile sizes are 1, 16, 32, 64 or 128.
// expected-error @+1 {{q tile must be 1, 16, 32, 64 or 128, got 8}}
func.func @f() attributes {t = #attn.tiles<q = 8, kv = 64, warps = 4, stages = 2>} { return }

// -----

// kv tile sizes are 32, 64 or 128.
// expected-error @+1 {{kv tile must be 32, 64 or 128, got 256}}
func.func @f() attributes {t = #attn.tiles<q = 16, kv = 256, warps = 4, stages = 2>} { return }

// -----

// warps are a power of two up to 16.
// expected-error @+1 {{warps must be 1, 2, 4, 8 or 16, got 3}}
func.func @f() attributes {t = #attn.tiles<q = 16, kv = 64, warps = 3, stages = 2>} { return }

// -----

// stages are 1..8.
// expected-error @+1 {{stages must be in 1..8, got 0}}
func.func @f() attributes {t = #attn.tiles<q = 16, kv = 64, warps = 4, stages = 0>} { return }

// -----

// Q in shared memory is a prefill-kernel layout (q >= 16).
// expected-error @+1 {{q_shared needs a prefill tile (q >= 16), got q = 1}}
func.func @f() attributes {t = #attn.tiles<q = 1, kv = 64, warps = 4, stages = 2, q_shared = true>} { return }

// -----

// chunked_state has the head shape rules of state.
// expected-error @+1 {{head_dim must be an even number in 2..1024 (hooks pair element i with i + head_dim/2), got 5}}
func.func @f(%s: !attn.chunked_state<heads = 4, head_dim = 5, @plain>) { return }

// -----

func.func @f(%k: tensor<?x2x16x8xf16>, %indices: tensor<?xi32>, %n: index) {
  // shared_paged_kv checks its pools like paged_kv (here: hnd heads dimension).
  // expected-error @+1 {{'attn.shared_paged_kv' op page pool dimension 1 (heads) is 2, but the view's heads is 4}}
  %kv = attn.shared_paged_kv %k, %k, %indices, %n
      : tensor<?x2x16x8xf16>, tensor<?x2x16x8xf16>
      -> !attn.paged_kv<page_size = 16, layout = hnd, heads = 4, head_dim = 8, f16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.attention: attended_views and chunks
//===----------------------------------------------------------------------===//

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // One attended_views flag per view.
  // expected-error @+1 {{'attn.attention' op attended_views has 2 entries, but there are 1 views}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64,
       attended_views = array<i1: true, false>}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // At least one view is attended.
  // expected-error @+1 {{'attn.attention' op attended_views must attend at least one view}}
  %o, %l = attn.attention @plain(%q, %kv, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64,
       attended_views = array<i1: false, false>}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?x4x8xf16>, tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
             %ci: tensor<?xi32>, %cs: tensor<?xi32>) {
  // The three chunk operands come together (only the generic form can omit one).
  // expected-error @+1 {{'attn.attention' op chunks need chunk_indptr, chunk_starts and chunk_ends}}
  %p = "attn.attention"(%q, %kv, %ci, %cs)
      <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 1, 0>,
        variant = @plain, num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}>
      : (!attn.ragged_q<heads = 4, head_dim = 8, f16>,
         !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
         tensor<?xi32>, tensor<?xi32>)
      -> !attn.chunked_state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
             %ci: tensor<?xi32>, %cs: tensor<?xi32>, %ce: tensor<?xi32>) {
  // A split attention returns one chunked state, not a state.
  // expected-error @+1 {{'attn.attention' op an attention split into chunks returns one !attn.chunked_state}}
  %s = attn.attention @plain(%q, %kv) chunks(%ci, %cs, %ce)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> !attn.state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
             %ci: tensor<?xi32>, %cs: tensor<?xi32>, %ce: tensor<?xi32>) {
  // The chunked state has the attention's heads, head_dim and variant.
  // expected-error @+1 {{'attn.attention' op result '!attn.chunked_state<heads = 4, head_dim = 8, @causal>' does not match the attention (4 heads of dim 8, variant 'plain')}}
  %p = attn.attention @plain(%q, %kv) chunks(%ci, %cs, %ce)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> !attn.chunked_state<heads = 4, head_dim = 8, @causal>
  return
}

// -----

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // A chunked state is only returned by an attention with chunks(...).
  // expected-error @+1 {{'attn.attention' op an !attn.chunked_state result needs chunks(...)}}
  %p = attn.attention @plain(%q, %kv)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> !attn.chunked_state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

attn.variant @sparse reduction sparsemax {}

func.func @f(%q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>,
             %ci: tensor<?xi32>, %cs: tensor<?xi32>, %ce: tensor<?xi32>) {
  // A sparsemax attention cannot be split into chunks.
  // expected-error @+1 {{'attn.attention' op variant 'sparse' has reduction 'sparsemax', which has no merge rule: its attention states cannot be split, composed or merged}}
  %p = attn.attention @sparse(%q, %kv) chunks(%ci, %cs, %ce)
      {num_qo_heads = 4 : i64, num_kv_heads = 2 : i64}
      : !attn.ragged_q<heads = 4, head_dim = 8, f16>,
        !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> !attn.chunked_state<heads = 4, head_dim = 8, @sparse>
  return
}

// -----

//===----------------------------------------------------------------------===//
// attn.merge_chunks / attn.uniform_chunks
//===----------------------------------------------------------------------===//

func.func @f(%p: !attn.chunked_state<heads = 4, head_dim = 8, @plain>,
             %q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %ci: tensor<?xi32>) {
  // The merged state matches the chunks.
  // expected-error @+1 {{'attn.merge_chunks' op result '!attn.state<heads = 4, head_dim = 8, @causal>' does not match the chunks '!attn.chunked_state<heads = 4, head_dim = 8, @plain>'}}
  %s = attn.merge_chunks %p, %q, %ci
      : !attn.chunked_state<heads = 4, head_dim = 8, @plain>,
        !attn.ragged_q<heads = 4, head_dim = 8, f16>
      -> !attn.state<heads = 4, head_dim = 8, @causal>
  return
}

// -----

func.func @f(%p: !attn.chunked_state<heads = 4, head_dim = 8, @plain>,
             %q: !attn.ragged_q<heads = 2, head_dim = 8, f16>,
             %ci: tensor<?xi32>) {
  // The queries match the chunks' head shape.
  // expected-error @+1 {{'attn.merge_chunks' op queries '!attn.ragged_q<heads = 2, head_dim = 8, f16>' do not match the chunks '!attn.chunked_state<heads = 4, head_dim = 8, @plain>'}}
  %s = attn.merge_chunks %p, %q, %ci
      : !attn.chunked_state<heads = 4, head_dim = 8, @plain>,
        !attn.ragged_q<heads = 2, head_dim = 8, f16>
      -> !attn.state<heads = 4, head_dim = 8, @plain>
  return
}

// -----

attn.variant @sparse reduction sparsemax {}

func.func @f(%p: !attn.chunked_state<heads = 4, head_dim = 8, @sparse>,
             %q: !attn.ragged_q<heads = 4, head_dim = 8, f16>,
             %ci: tensor<?xi32>) {
  // Sparsemax chunks have no merge rule.
  // expected-error @+1 {{'attn.merge_chunks' op variant 'sparse' has reduction 'sparsemax', which has no merge rule: its attention states cannot be split, composed or merged}}
  %s = attn.merge_chunks %p, %q, %ci
      : !attn.chunked_state<heads = 4, head_dim = 8, @sparse>,
        !attn.ragged_q<heads = 4, head_dim = 8, f16>
      -> !attn.state<heads = 4, head_dim = 8, @sparse>
  return
}

// -----

func.func @f() {
  // uniform_chunks needs a view (only the generic form can have none).
  // expected-error @+1 {{'attn.uniform_chunks' op expects at least one KV view}}
  %ci, %cs, %ce = "attn.uniform_chunks"() <{chunk_size = 4 : i64}>
      : () -> (tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
  return
}

// -----

func.func @f(%kv: !attn.ragged_kv<heads = 2, head_dim = 8, f16>) {
  // Chunks hold at least one key.
  // expected-error @+1 {{'attn.uniform_chunks' op chunk_size must be >= 1, got 0}}
  %ci, %cs, %ce = attn.uniform_chunks(%kv) {chunk_size = 0 : i64}
      : !attn.ragged_kv<heads = 2, head_dim = 8, f16>
      -> tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// #attn.tiles bounds (attn-select-tiles chooses within them)
//===----------------------------------------------------------------------===//

// Above the largest q tile.
// expected-error @+1 {{q tile must be 1, 16, 32, 64 or 128, got 256}}
func.func @f() attributes {t = #attn.tiles<q = 256, kv = 64, warps = 4, stages = 2>} { return }

// -----

// Below the smallest kv tile.
// expected-error @+1 {{kv tile must be 32, 64 or 128, got 16}}
func.func @f() attributes {t = #attn.tiles<q = 16, kv = 16, warps = 4, stages = 2>} { return }

// -----

// More warps than a 1024-thread block holds.
// expected-error @+1 {{warps must be 1, 2, 4, 8 or 16, got 32}}
func.func @f() attributes {t = #attn.tiles<q = 128, kv = 64, warps = 32, stages = 2>} { return }

// -----

// Above the deepest pipeline.
// expected-error @+1 {{stages must be in 1..8, got 9}}
func.func @f() attributes {t = #attn.tiles<q = 128, kv = 64, warps = 8, stages = 9>} { return }

// -----

// Hooks are inlined per key and per row: they must be pure.
attn.variant @impure reduction softmax {
  logits(%s: f32, %q: index, %k: index, %h: index) {
    // expected-error @+1 {{'memref.alloc' op cannot be used in the 'logits' hook of a variant: hooks must be pure (no side effects, no attn ops)}}
    %m = memref.alloc() : memref<1xf32>
    memref.store %s, %m[%q] : memref<1xf32>
    attn.yield %s : f32
  }
}

// -----

// Outputs are f16, bf16 or f32 like the views.
func.func @f64_output(%q: !attn.ragged_q<heads = 2, head_dim = 8, f32>,
                      %kv: !attn.ragged_kv<heads = 1, head_dim = 8, f32>) {
  // expected-error @+1 {{'attn.attention' op output element type must be f16, bf16 or f32, got 'f64'}}
  %o, %l = attn.attention @plain(%q, %kv)
      {num_qo_heads = 2 : i64, num_kv_heads = 1 : i64}
      : !attn.ragged_q<heads = 2, head_dim = 8, f32>,
        !attn.ragged_kv<heads = 1, head_dim = 8, f32>
      -> tensor<?x2x8xf64>, tensor<?x2xf32>
  return
}

// -----

attn.variant @sparse_fin reduction sparsemax {}

// No state of a variant without merge rule exists, so none is finalized.
func.func @finalize_sparse(%s: !attn.state<heads = 2, head_dim = 8, @sparse_fin>) {
  // expected-error @+1 {{'attn.finalize' op variant 'sparse_fin' has reduction 'sparsemax', which has no merge rule}}
  %o, %l = attn.finalize %s : !attn.state<heads = 2, head_dim = 8, @sparse_fin>
      -> tensor<?x2x8xf32>, tensor<?x2xf32>
  return
}

// -----

// head_dim has an upper bound.
// expected-error @+1 {{head_dim must be an even number in 2..1024}}
func.func @huge_head(%q: !attn.ragged_q<heads = 1, head_dim = 2048, f16>) {
  return
}

//===- AttnOps.td - attn dialect operations -----------------*- tablegen -*-===//

#ifndef FLASHIR_DIALECT_ATTN_IR_ATTNOPS_TD
#define FLASHIR_DIALECT_ATTN_IR_ATTNOPS_TD

include "flashir/Dialect/Attn/IR/AttnBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

// Page tables and indptr arrays are runtime metadata: always `tensor<?xi32>`.
def Attn_IndexArray : Type<
    CPred<"::flashir::attn::isIndexArrayType($_self)">,
    "tensor<?xi32>", "::mlir::RankedTensorType">,
    BuildableType<"::mlir::RankedTensorType::get({::mlir::ShapedType::kDynamic}, "
                  "$_builder.getI32Type())">;

//===----------------------------------------------------------------------===//
// Variants
//===----------------------------------------------------------------------===//

def Attn_VariantOp : Attn_Op<"variant", [
    Symbol, IsolatedFromAbove]> {
  let summary = "an attention variant: reduction kind + optional hook regions";
  let description = [{
    Defines *what* an attention computes, independent of where KV lives and
    how the computation is scheduled. Every hook is optional; an absent hook
    is the identity (no mask: every key of the request is visible).

    | hook     | block arguments                                          | yields |
    |----------|----------------------------------------------------------|--------|
    | `query`  | `x: f32, x_rot: f32, dim: index, qpos: index, head: index` | `f32` |
    | `key`    | `x: f32, x_rot: f32, dim: index, kpos: index, head: index` | `f32` |
    | `logits` | `s: f32, qpos: index, kpos: index, head: index`          | `f32`  |
    | `mask`   | `qpos: index, kpos: index, head: index`                  | `i1`   |
    | `output` | `o: f32, dim: index, head: index`                        | `f32`  |

    `query`, `key`, `logits` and `mask` take the variant's parameters as
    trailing arguments, in declaration order. `x_rot` is the element half a
    head away (`x[(dim + d/2) mod d]`), enough for rotate-half RoPE. `head` is
    the query head (for `key`, the KV head). Positions are logical.

    Order of evaluation for query row `i`, key `j`, query head `h`:
    `s = scale * <query(q), key(k)>`, then `s = logits(s)`; keys with
    `mask = false` are excluded from the reduction (not given a large negative
    score); the reduced vector goes through `output` per element.

    ```mlir
    attn.variant @softcap30 reduction softmax {
      logits(%s: f32, %q: index, %k: index, %h: index) {
        %c = arith.constant 30.0 : f32
        %x = arith.divf %s, %c : f32
        %t = math.tanh %x : f32
        %r = arith.mulf %t, %c : f32
        attn.yield %r : f32
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Attn_ReductionKindAttr:$reduction,
                       TypedArrayAttrBase<Attn_VariantParamAttr,
                                          "variant parameters">:$params);
  let regions = (region MaxSizedRegion<1>:$query, MaxSizedRegion<1>:$key,
                        MaxSizedRegion<1>:$logits, MaxSizedRegion<1>:$mask,
                        MaxSizedRegion<1>:$output);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of leading (non-parameter) block arguments of hook `index`.
    static unsigned getNumHookContextArgs(unsigned index);
    /// Hook names in region order.
    static ::llvm::ArrayRef<::llvm::StringRef> getHookNames();
    /// Whether states of this variant can be merged (split, composed).
    bool isMergeable() { return ::flashir::attn::isMergeable(getReduction()); }
    ::llvm::SmallVector<VariantParamAttr> getParamList();
  }];
}

def Attn_YieldOp : Attn_Op<"yield", [
    Pure, ReturnLike, Terminator, HasParent<"VariantOp">]> {
  let summary = "yields the result of a variant hook";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

def Attn_PagedKVOp : Attn_Op<"paged_kv", [Pure]> {
  let summary = "a block-sparse-row view over K/V page pools";
  let description = [{
    Views K and V page pools (`[pages, page_size, heads, dim]` for `nhd`,
    `[pages, heads, page_size, dim]` for `hnd`) through a page table:
    `indptr` [B+1], `indices` (physical page ids, any order, pages may be
    shared between requests), `last_page_len` [B].

    ```mlir
    %kv = attn.paged_kv %k, %v, %indptr, %indices, %last
        : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>
        -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8,
                          head_dim = 128, f16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$k_pages, AnyRankedTensor:$v_pages,
                       Attn_IndexArray:$indptr, Attn_IndexArray:$indices,
                       Attn_IndexArray:$last_page_len);
  let results = (outs Attn_PagedKVType:$result);
  let assemblyFormat = [{
    $k_pages `,` $v_pages `,` $indptr `,` $indices `,` $last_page_len attr-dict
    `:` type($k_pages) `,` type($v_pages) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_RaggedKVOp : Attn_Op<"ragged_kv", [Pure]> {
  let summary = "a contiguous ragged KV view";
  let description = [{
    ```mlir
    %kv = attn.ragged_kv %k, %v, %kv_indptr
        : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>
        -> !attn.ragged_kv<heads = 8, head_dim = 128, bf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$keys, AnyRankedTensor:$values,
                       Attn_IndexArray:$kv_indptr);
  let results = (outs Attn_RaggedKVType:$result);
  let assemblyFormat = [{
    $keys `,` $values `,` $kv_indptr attr-dict
    `:` type($keys) `,` type($values) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_SharedPagedKVOp : Attn_Op<"shared_paged_kv", [Pure]> {
  let summary = "a paged view every request of the batch shares";
  let description = [{
    All requests see the same `length` tokens stored in pages `indices`
    (a shared prefix such as a system prompt): token `t` is slot
    `t % page_size` of page `indices[t / page_size]`. As the first view of an
    attention it declares a shared prefix that `attn-compose-prefix` can
    attend once for every query.

    ```mlir
    %prefix = attn.shared_paged_kv %k, %v, %indices, %length
        : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>
        -> !attn.paged_kv<page_size = 16, layout = nhd, heads = 8,
                          head_dim = 128, f16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$k_pages, AnyRankedTensor:$v_pages,
                       Attn_IndexArray:$indices, Index:$length);
  let results = (outs Attn_PagedKVType:$result);
  let assemblyFormat = [{
    $k_pages `,` $v_pages `,` $indices `,` $length attr-dict
    `:` type($k_pages) `,` type($v_pages) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_RaggedQOp : Attn_Op<"ragged_q", [Pure]> {
  let summary = "ragged queries of a batch";
  let description = [{
    ```mlir
    %q = attn.ragged_q %queries, %qo_indptr : tensor<?x32x128xf16>
        -> !attn.ragged_q<heads = 32, head_dim = 128, f16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$queries, Attn_IndexArray:$qo_indptr);
  let results = (outs Attn_RaggedQType:$result);
  let assemblyFormat = [{
    $queries `,` $qo_indptr attr-dict `:` qualified(type($queries)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [
    Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "attention of ragged queries over one or more KV views";
  let description = [{
    Computes the attention of `variant` for every query row and query head.
    The keys of request `i` are the concatenation, in operand order, of
    request `i`'s keys in each view (e.g. a shared prefix view followed by a
    suffix view); key positions run across the concatenation. All views and
    the queries have the same number of requests.

    `scale` defaults to `1/sqrt(head_dim)`. `num_qo_heads` must be a multiple
    of `num_kv_heads`: query head `h` reads KV head `h / (Hq/Hkv)`.

    Execution attributes (they never change what is computed):
    `attended_views` (one flag per view) restricts the attended keys to the
    flagged views while positions still count every view — how
    `attn-compose-prefix` splits a shared prefix from the suffixes;
    `fused_head_groups` folds the `Hq/Hkv` query heads of a KV head into rows
    (`attn-fuse-head-groups`); `tiles` is the tile configuration
    (`attn-select-tiles`).

    With `chunks(%chunk_indptr, %chunk_starts, %chunk_ends)` the keys of
    request `b` are split into chunks `c` in
    `chunk_indptr[b] .. chunk_indptr[b+1]`, chunk `c` covering key positions
    `[chunk_starts[c], chunk_ends[c])`; the result is an
    `!attn.chunked_state` with one partial state per chunk and row, for
    `attn.merge_chunks` (`attn-split-kv`). Chunks of a request must cover its
    keys without overlap for the merge to equal the unsplit attention.

    Results are either the finalized output (`[total_q, Hq, d]`, any float
    element type) and `lse` (`[total_q, Hq]`, f32, natural log), or a single
    `!attn.state` of the variant for a later `attn.merge` (only for variants
    whose reduction has a merge rule). A row with no visible key has output 0
    and `lse = -inf`.

    ```mlir
    %o, %lse = attn.attention @causal(%q, %kv)
        {num_qo_heads = 32 : i64, num_kv_heads = 8 : i64}
        : !attn.ragged_q<heads = 32, head_dim = 128, f16>,
          !attn.paged_kv<page_size = 16, layout = nhd, heads = 8,
                         head_dim = 128, f16>
        -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Attn_RaggedQType:$queries,
                       Variadic<Attn_AnyKVView>:$views,
                       Variadic<AnyType>:$params,
                       Optional<Attn_IndexArray>:$chunk_indptr,
                       Optional<Attn_IndexArray>:$chunk_starts,
                       Optional<Attn_IndexArray>:$chunk_ends,
                       FlatSymbolRefAttr:$variant,
                       OptionalAttr<F32Attr>:$scale,
                       I64Attr:$num_qo_heads, I64Attr:$num_kv_heads,
                       OptionalAttr<DenseBoolArrayAttr>:$attended_views,
                       UnitAttr:$fused_head_groups,
                       OptionalAttr<Attn_TileConfigAttr>:$tiles);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $variant `(` $queries `,` $views `)`
    (`params` `(` $params^ `:` type($params) `)`)?
    (`chunks` `(` $chunk_indptr^ `,` $chunk_starts `,` $chunk_ends `)`)?
    attr-dict `:` qualified(type($queries)) `,` qualified(type($views)) `->` qualified(type($results))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scale applied to <q, k>: the attribute, or 1/sqrt(head_dim).
    float getEffectiveScale();
    /// Whether this attention returns an `!attn.state`.
    bool returnsState() {
      return getNumResults() == 1 &&
             ::llvm::isa<StateType>(getResult(0).getType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// States
//===----------------------------------------------------------------------===//

def Attn_EmptyStateOp : Attn_Op<"empty_state", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the state of rows that see no key (identity of merge)";
  let description = [{
    `%rows` rows of `O = 0`, `lse = -inf`.

    ```mlir
    %e = attn.empty_state @causal %rows
        : !attn.state<heads = 32, head_dim = 128, @causal>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$variant, Index:$rows);
  let results = (outs Attn_StateType:$result);
  let assemblyFormat = "$variant $rows attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Attn_MakeStateOp : Attn_Op<"make_state", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a state from an output tensor and its lse";
  let description = [{
    Wraps `o` (`[rows, H, d]` f32) and `lse` (`[rows, H]` f32, natural log) as
    a state of `variant`, e.g. partial results read back from a workspace.

    ```mlir
    %s = attn.make_state @causal %o, %lse
        : tensor<?x32x128xf32>, tensor<?x32xf32>
        -> !attn.state<heads = 32, head_dim = 128, @causal>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$variant, AnyRankedTensor:$output,
                       AnyRankedTensor:$lse);
  let results = (outs Attn_StateType:$result);
  let assemblyFormat = [{
    $variant $output `,` $lse attr-dict `:` type($output) `,` type($lse)
    `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_MergeOp : Attn_Op<"merge", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "ordered merge of attention states of one variant";
  let description = [{
    Merges states over disjoint key sets of the same rows, left to right (the
    order fixes floating-point rounding; mathematically the merge is
    associative and commutative). The rule comes from the variant's
    reduction: softmax merges by eq. (6),
    `m = max(l_a, l_b)`, `O = (e^(l_a-m) O_a + e^(l_b-m) O_b) / (e^(l_a-m) + e^(l_b-m))`,
    `l = m + log(e^(l_a-m) + e^(l_b-m))`; sigmoid sums outputs and
    log-add-exps `lse`. Empty states (`lse = -inf`) are the identity.

    ```mlir
    %s = attn.merge %a, %b : !attn.state<heads = 32, head_dim = 128, @causal>,
        !attn.state<heads = 32, head_dim = 128, @causal>
        -> !attn.state<heads = 32, head_dim = 128, @causal>
    ```
  }];
  let arguments = (ins Variadic<Attn_StateType>:$states);
  let results = (outs Attn_StateType:$result);
  let assemblyFormat = [{
    $states attr-dict `:` qualified(type($states)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Attn_MergeChunksOp : Attn_Op<"merge_chunks", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "merge the per-chunk states of a split attention";
  let description = [{
    For every request, row and head, merges the partial states of the
    request's chunks in chunk order (the variant's merge rule), giving one
    state per query row. A request without chunks gives empty states.

    ```mlir
    %s = attn.merge_chunks %parts, %q, %chunk_indptr
        : !attn.chunked_state<heads = 32, head_dim = 128, @causal>,
          !attn.ragged_q<heads = 32, head_dim = 128, f16>
        -> !attn.state<heads = 32, head_dim = 128, @causal>
    ```
  }];
  let arguments = (ins Attn_ChunkedStateType:$parts, Attn_RaggedQType:$queries,
                       Attn_IndexArray:$chunk_indptr);
  let results = (outs Attn_StateType:$result);
  let assemblyFormat = [{
    $parts `,` $queries `,` $chunk_indptr attr-dict `:` qualified(type($parts))
    `,` qualified(type($queries)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Attn_UniformChunksOp : Attn_Op<"uniform_chunks", [Pure]> {
  let summary = "chunks of a fixed number of keys for every request";
  let description = [{
    Splits the keys of each request (the concatenation of `views`) into
    chunks of `chunk_size` keys, the last one shorter; a request without keys
    gets no chunk. The chunks of a request depend on that request alone,
    which makes split attention batch-invariant.

    ```mlir
    %ci, %cs, %ce = attn.uniform_chunks(%kv) {chunk_size = 256 : i64}
        : !attn.paged_kv<page_size = 16, layout = nhd, heads = 8,
                         head_dim = 128, f16>
        -> tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Variadic<Attn_AnyKVView>:$views, I64Attr:$chunk_size);
  let results = (outs Attn_IndexArray:$chunk_indptr,
                      Attn_IndexArray:$chunk_starts,
                      Attn_IndexArray:$chunk_ends);
  let assemblyFormat = [{
    `(` $views `)` attr-dict `:` qualified(type($views)) `->` type(results)
  }];
  let hasVerifier = 1;
}

def Attn_FinalizeOp : Attn_Op<"finalize", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "output and lse of a state, through the output hook";
  let description = [{
    Applies the variant's `output` hook to every element of `O` and converts
    it to the result element type; `lse` is returned unchanged.

    ```mlir
    %o, %lse = attn.finalize %s
        : !attn.state<heads = 32, head_dim = 128, @causal>
        -> tensor<?x32x128xbf16>, tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Attn_StateType:$state);
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$lse);
  let assemblyFormat = [{
    $state attr-dict `:` qualified(type($state)) `->` type($output) `,` type($lse)
  }];
  let hasVerifier = 1;
}

#endif // FLASHIR_DIALECT_ATTN_IR_ATTNOPS_TD

//===- AttnBase.td - attn dialect, enums, attributes, types -*- tablegen -*-===//
//
// The `attn` dialect: attention over views of (paged) KV caches, variants
// written as hook regions, and mergeable attention states.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHIR_DIALECT_ATTN_IR_ATTNBASE_TD
#define FLASHIR_DIALECT_ATTN_IR_ATTNBASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::flashir::attn";
  let summary = "Attention for LLM inference over paged KV caches";
  let description = [{
    The `attn` dialect makes three things first-class IR:

    1. *Where KV lives*: block-sparse-row (BSR) views over a paged KV cache
       (`!attn.paged_kv`), contiguous ragged KV (`!attn.ragged_kv`) and ragged
       queries (`!attn.ragged_q`). Page tables are runtime values; page size,
       layout, head count, head dimension and element type are compile-time
       parameters of the view type.
    2. *What is computed*: an `attn.variant` symbol holds optional hook regions
       (query/key transform, logits transform, mask, output transform) and a
       reduction kind (`softmax`, `sigmoid`, or the non-mergeable
       `sparsemax`). A library of standard variants (`@plain`, `@causal`,
       `@sliding_window`, `@soft_cap`, `@alibi`, `@custom_mask`, `@sigmoid`)
       is written in the dialect itself and is available to every module.
    3. *How partial results combine*: `!attn.state` values `(O, lse)` and
       `attn.merge`, whose rule comes from the variant's reduction
       (log-sum-exp weighted for softmax, plain sum for sigmoid).

    Positions seen by hooks are logical: for a request with `Lq` queries and
    `Lkv` keys, query row `i` sits at position `i + Lkv - Lq`; keys are
    numbered `0 .. Lkv-1` across the concatenation of all views.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // `attn.launch` on generated kernels (LaunchAttr).
  let hasOperationAttrVerify = 1;
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let extraClassDeclaration = [{
    /// Returns the standard variant named `name` from the built-in library,
    /// or null. The library is parsed on first use and published once per
    /// context; safe to call from the verifier's worker threads.
    VariantOp lookupStandardVariant(::llvm::StringRef name);

    /// The MLIR source of the standard variant library.
    static ::llvm::StringRef getStandardLibrarySource();

  private:
    ::mlir::OwningOpRef<::mlir::ModuleOp> standardLibrary;
    bool standardLibraryParsed = false;
    /// Guards the two fields above only: never held across parsing or
    /// verification (see lookupStandardVariant).
    std::mutex standardLibraryMutex;
  public:
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Attn_KVLayout : I32EnumAttr<"KVLayout", "KV page pool layout", [
    I32EnumAttrCase<"NHD", 0, "nhd">,
    I32EnumAttrCase<"HND", 1, "hnd">
  ]> {
  let cppNamespace = "::flashir::attn";
  let genSpecializedAttr = 0;
}

def Attn_ReductionKind : I32EnumAttr<"ReductionKind",
    "how the scores of a query row are reduced over its keys", [
    I32EnumAttrCase<"Softmax", 0, "softmax">,
    I32EnumAttrCase<"Sigmoid", 1, "sigmoid">,
    I32EnumAttrCase<"Sparsemax", 2, "sparsemax">
  ]> {
  let cppNamespace = "::flashir::attn";
  let genSpecializedAttr = 0;
}

def Attn_KernelKind : I32EnumAttr<"KernelKind",
    "what a generated kernel computes", [
    I32EnumAttrCase<"Decode", 0, "decode">,
    I32EnumAttrCase<"Prefill", 1, "prefill">,
    I32EnumAttrCase<"Merge", 2, "merge">
  ]> {
  let cppNamespace = "::flashir::attn";
  let genSpecializedAttr = 0;
}

def Attn_ParamKind : I32EnumAttr<"ParamKind",
    "how a variant parameter is supplied and indexed", [
    I32EnumAttrCase<"Scalar", 0, "scalar">,
    I32EnumAttrCase<"PerRequest", 1, "per_request">,
    I32EnumAttrCase<"PerHead", 2, "per_head">,
    I32EnumAttrCase<"Buffer", 3, "buffer">
  ]> {
  let cppNamespace = "::flashir::attn";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Attn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Attn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Attn_KVLayoutAttr : EnumAttr<Attn_Dialect, Attn_KVLayout, "layout"> {
  let summary = "KV page pool layout: `nhd` = [pages, page, heads, dim], "
                "`hnd` = [pages, heads, page, dim]";
  let assemblyFormat = "`<` $value `>`";
}

def Attn_ReductionKindAttr
    : EnumAttr<Attn_Dialect, Attn_ReductionKind, "reduction"> {
  let summary = "reduction of a query row's scores";
  let description = [{
    - `softmax`: `O = Σ exp(s_j) v_j / Σ exp(s_j)`, `lse = log Σ exp(s_j)`.
      States merge by the log-sum-exp weighted rule (eq. 5/6).
    - `sigmoid`: `O = Σ σ(s_j) v_j` (unnormalised), `lse = log Σ σ(s_j)`.
      States merge by summing outputs (eq. 9).
    - `sparsemax`: `O = Σ max(s_j - τ, 0) v_j` with `τ` chosen so the weights
      sum to one. It needs the whole row at once: it has no merge rule, so its
      attention cannot be split, composed or returned as a state.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Attn_VariantParamAttr : Attn_Attr<"VariantParam", "param"> {
  let summary = "a request-level parameter declared by a variant";
  let description = [{
    A named value the hooks of a variant receive as trailing block arguments.
    The attention op supplies one operand per parameter:

    | kind          | operand type          | hook argument          |
    |---------------|-----------------------|------------------------|
    | `scalar`      | `T`                   | `T`                    |
    | `per_request` | `tensor<?xT>` [B]     | `T` of the query's request |
    | `per_head`    | `tensor<HqxT>`        | `T` of the query head  |
    | `buffer`      | the declared tensor   | the whole tensor       |

    `T` is an integer, index or float type.

    Example: `#attn.param<"window_left", i32, per_request>`
  }];
  let parameters = (ins StringRefParameter<"parameter name">:$name,
                        "::mlir::Type":$type,
                        EnumParameter<Attn_ParamKind>:$kind);
  let assemblyFormat = "`<` $name `,` $type `,` $kind `>`";
  let genVerifyDecl = 1;
}

def Attn_TileConfigAttr : Attn_Attr<"TileConfig", "tiles"> {
  let summary = "the tile configuration of an attention";
  let description = [{
    Chosen by `attn-select-tiles` per target chip, head dim, element type and
    average query length (seed 000 sec. 5): `q` query rows (or fused
    head-group rows) per CTA in {1, 16, 32, 64, 128}, `kv` keys per tile in
    {32, 64, 128}, `warps` per CTA, `stages` of the K/V pipeline (prefill on
    sm_80+: 1 = one K and one V buffer, staggered). The loop
    lowering visits keys tile by tile: one running-max rescale per tile. The
    tensor-core prefill kernel (`q >= 16`) gives each warp 32 rows when
    `q = 32 * warps`, else 16 (`q / 16` warps). With 32 rows per warp the Q
    tile waits in shared memory (re-read by `ldmatrix` per k step); with 16
    it stays in registers unless `q_shared = true` asks for shared memory
    too (fewer registers next to a large O, e.g. at head dim 256).

    Example: `#attn.tiles<q = 16, kv = 64, warps = 4, stages = 2>`,
    `#attn.tiles<q = 64, kv = 32, warps = 4, stages = 2, q_shared = true>`
  }];
  let parameters = (ins "int64_t":$q, "int64_t":$kv, "int64_t":$warps,
                        "int64_t":$stages,
                        DefaultValuedParameter<"bool", "false">:$qShared);
  let assemblyFormat = [{
    `<` `q` `=` $q `,` `kv` `=` $kv `,` `warps` `=` $warps `,`
        `stages` `=` $stages (`,` `q_shared` `=` $qShared^)? `>`
  }];
  let genVerifyDecl = 1;
}

def Attn_LaunchAttr : Attn_Attr<"Launch", "launch"> {
  let summary = "how the host launches a generated kernel";
  let description = [{
    `convert-attn-to-gpu` puts `attn.launch` on every kernel it generates:
    the kernel ABI that `flashir-bundle` writes into the bundle manifest and
    the runtime checks (`include/flashir/ABI`).

    - `kind`: `decode` and `prefill` kernels attend over the paged KV cache
      (one query row, or a tile of `q_tokens` tokens, per CTA); `merge`
      kernels combine a split kernel's partial states.
    - `grid`: the CTA grid, x to z: `requests` or `chunks` (split-KV),
      `q_tiles` for prefill, then `num_qo_heads` or `num_kv_heads`.
    - `block`: threads per CTA; `variant`: the variant the kernel computes.
    - `args`: the kernel arguments' names; the fixed ones of the kernel kind
      come first in the ABI's order (their names are their roles), then the
      variant parameters.
    - `merge_kernel`: a split kernel's merge kernel (a kernel of the same
      module with kind `merge`).
    - Launch facts of this chip: cp.async `stages`, `unroll`, `tensor_cores`,
      `bulk_copy`, the `tensor_map_box` of the pools' tensor maps (three
      extents, or five for the grouped map of 8-key groups over every
      64-column box: abi::kvTensorMap), the
      `dynamic_shared_memory` the launch passes, the prefill tile
      (`q_rows`, `q_tokens`, `kv_tile`), and whether the kernel waits for its
      stream predecessor itself (`programmatic_wait`) or completes after it
      (`completes_after_predecessor`), and whether its CTAs walk the whole
      grid (`persistent`: the host may launch a smaller z extent, down to
      one, e.g. just enough CTAs to fill the device).

    Example:
    `#attn.launch<kind = decode, grid = "requests x num_kv_heads",
    block = 128, variant = @plain, args = ["q", ...], stages = 4>`
  }];
  let parameters = (ins
    EnumParameter<Attn_KernelKind>:$kind,
    StringRefParameter<"the CTA grid">:$grid,
    "int64_t":$block,
    "::mlir::FlatSymbolRefAttr":$variant,
    "::mlir::ArrayAttr":$args,
    OptionalParameter<"::mlir::FlatSymbolRefAttr">:$merge_kernel,
    DefaultValuedParameter<"int64_t", "0">:$stages,
    DefaultValuedParameter<"int64_t", "0">:$unroll,
    DefaultValuedParameter<"bool", "false">:$tensor_cores,
    DefaultValuedParameter<"bool", "false">:$bulk_copy,
    OptionalParameter<"::mlir::DenseI64ArrayAttr">:$tensor_map_box,
    DefaultValuedParameter<"int64_t", "0">:$dynamic_shared_memory,
    DefaultValuedParameter<"int64_t", "0">:$q_rows,
    DefaultValuedParameter<"int64_t", "0">:$q_tokens,
    DefaultValuedParameter<"int64_t", "0">:$kv_tile,
    DefaultValuedParameter<"bool", "false">:$programmatic_wait,
    DefaultValuedParameter<"bool", "false">:$completes_after_predecessor,
    DefaultValuedParameter<"bool", "false">:$persistent);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The names in `args`.
    ::llvm::SmallVector<std::string> getArgNames() const;
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

class Attn_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Attn_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Attn_PagedKVType : Attn_Type<"PagedKV", "paged_kv"> {
  let summary = "block-sparse-row view of a paged KV cache";
  let description = [{
    A batch of requests whose keys/values live in fixed-size pages of a page
    pool. Request `i` owns pages `indices[indptr[i] .. indptr[i+1])`, all full
    except the last, which holds `last_page_len[i]` tokens (1..page_size); a
    request with no pages is empty. Its KV length is
    `(indptr[i+1] - indptr[i] - 1) * page_size + last_page_len[i]`.

    Example: `!attn.paged_kv<page_size = 16, layout = nhd, heads = 8,
    head_dim = 128, f16>`
  }];
  let parameters = (ins "int64_t":$pageSize,
                        EnumParameter<Attn_KVLayout>:$layout,
                        "int64_t":$numHeads, "int64_t":$headDim,
                        "::mlir::Type":$elementType);
  let assemblyFormat = [{
    `<` `page_size` `=` $pageSize `,` `layout` `=` $layout `,`
        `heads` `=` $numHeads `,` `head_dim` `=` $headDim `,` $elementType `>`
  }];
  let genVerifyDecl = 1;
}

def Attn_RaggedKVType : Attn_Type<"RaggedKV", "ragged_kv"> {
  let summary = "contiguous ragged KV: request i owns rows kv_indptr[i]..";
  let description = [{
    Keys/values of all requests packed along the token dimension of
    `[total_kv, heads, head_dim]` tensors; request `i` owns rows
    `kv_indptr[i] .. kv_indptr[i+1]`.

    Example: `!attn.ragged_kv<heads = 8, head_dim = 128, bf16>`
  }];
  let parameters = (ins "int64_t":$numHeads, "int64_t":$headDim,
                        "::mlir::Type":$elementType);
  let assemblyFormat = [{
    `<` `heads` `=` $numHeads `,` `head_dim` `=` $headDim `,` $elementType `>`
  }];
  let genVerifyDecl = 1;
}

def Attn_RaggedQType : Attn_Type<"RaggedQ", "ragged_q"> {
  let summary = "ragged queries: request i owns rows qo_indptr[i]..";
  let description = [{
    Queries of all requests packed as `[total_q, heads, head_dim]`; request
    `i` owns rows `qo_indptr[i] .. qo_indptr[i+1]`. Outputs and states use the
    same row numbering.

    Example: `!attn.ragged_q<heads = 32, head_dim = 128, f16>`
  }];
  let parameters = (ins "int64_t":$numHeads, "int64_t":$headDim,
                        "::mlir::Type":$elementType);
  let assemblyFormat = [{
    `<` `heads` `=` $numHeads `,` `head_dim` `=` $headDim `,` $elementType `>`
  }];
  let genVerifyDecl = 1;
}

def Attn_StateType : Attn_Type<"State", "state"> {
  let summary = "mergeable attention state (O, lse) of one variant";
  let description = [{
    Per query row and head: an f32 output vector `O` and an f32 `lse` (natural
    log of the reduction's normaliser). The variant is part of the type: only
    states of the same variant merge, by the rule of its reduction. An empty
    state (no visible key) has `lse = -inf` and is the identity of merge.

    Example: `!attn.state<heads = 32, head_dim = 128, @causal>`
  }];
  let parameters = (ins "int64_t":$numHeads, "int64_t":$headDim,
                        "::mlir::FlatSymbolRefAttr":$variant);
  let assemblyFormat = [{
    `<` `heads` `=` $numHeads `,` `head_dim` `=` $headDim `,` $variant `>`
  }];
  let genVerifyDecl = 1;
}

def Attn_ChunkedStateType : Attn_Type<"ChunkedState", "chunked_state"> {
  let summary = "per-chunk partial states of a split attention";
  let description = [{
    The states of an attention whose keys were split into chunks
    (`attn.attention ... chunks(...)`): for request `b` with `Lq` rows and
    chunks `c` in `chunk_indptr[b] .. chunk_indptr[b+1]`, the `Lq` rows of
    chunk `c` are contiguous, chunks of a request follow each other, requests
    follow each other. `attn.merge_chunks` merges them in chunk order.

    Example: `!attn.chunked_state<heads = 32, head_dim = 128, @causal>`
  }];
  let parameters = (ins "int64_t":$numHeads, "int64_t":$headDim,
                        "::mlir::FlatSymbolRefAttr":$variant);
  let assemblyFormat = [{
    `<` `heads` `=` $numHeads `,` `head_dim` `=` $headDim `,` $variant `>`
  }];
  let genVerifyDecl = 1;
}

def Attn_AnyKVView : AnyTypeOf<[Attn_PagedKVType, Attn_RaggedKVType],
                               "KV view">;

#endif // FLASHIR_DIALECT_ATTN_IR_ATTNBASE_TD

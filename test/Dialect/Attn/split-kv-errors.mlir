// RUN: not flashir-opt %s -attn-split-kv=chunk-size=-3 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: flashir-opt %s -split-input-file -attn-split-kv=chunk-size=0 -verify-diagnostics

// NEGATIVE: attn-split-kv: chunk-size must be >= 0 (0: runtime chunks), got -3

!q  = !attn.ragged_q<heads = 1, head_dim = 8, f16>
!kv = !attn.ragged_kv<heads = 1, head_dim = 8, f16>

// Runtime chunks become function arguments: the attention must sit directly
// in a func.func.
func.func @nested(%q: !q, %kv: !kv, %c: i1) {
  scf.if %c {
    // expected-error @+1 {{runtime chunks need the attention directly in a func.func, whose arguments carry them}}
    %o, %l = attn.attention @plain(%q, %kv)
        {num_qo_heads = 1 : i64, num_kv_heads = 1 : i64} : !q, !kv
        -> tensor<?x1x8xf16>, tensor<?x1xf32>
  }
  return
}

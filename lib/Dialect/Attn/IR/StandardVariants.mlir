// The standard attention variants, written in the attn dialect itself.
//
// Every module can name these without defining them; `attn-import-variants`
// copies the ones a module uses into it. A variant the module defines under
// the same name takes precedence. Positions are logical: query row i of a
// request with Lq queries and Lkv keys sits at qpos = i + Lkv - Lq.

// Softmax over every key of the request.
attn.variant @plain reduction softmax {}

// Bottom-right aligned causal mask: key kpos is visible iff kpos <= qpos.
attn.variant @causal reduction softmax {
  mask(%qpos: index, %kpos: index, %head: index) {
    %keep = arith.cmpi sle, %kpos, %qpos : index
    attn.yield %keep : i1
  }
}

// Causal sliding window (FlashInfer's window_left): the query sees itself and
// window_left keys to its left, qpos - window_left <= kpos <= qpos. A negative
// window_left means no window (plain causal).
attn.variant @sliding_window reduction softmax
    params(window_left : i32 per_request) {
  mask(%qpos: index, %kpos: index, %head: index, %window_left: i32) {
    %causal = arith.cmpi sle, %kpos, %qpos : index
    %zero = arith.constant 0 : i32
    %unbounded = arith.cmpi slt, %window_left, %zero : i32
    %w = arith.index_cast %window_left : i32 to index
    %reach = arith.addi %kpos, %w : index
    %inside = arith.cmpi sge, %reach, %qpos : index
    %near = arith.ori %unbounded, %inside : i1
    %keep = arith.andi %causal, %near : i1
    attn.yield %keep : i1
  }
}

// Causal attention with logits soft-capping (eq. 8): s -> cap * tanh(s / cap).
attn.variant @soft_cap reduction softmax params(cap : f32 scalar) {
  logits(%s: f32, %qpos: index, %kpos: index, %head: index, %cap: f32) {
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %r = arith.mulf %t, %cap : f32
    attn.yield %r : f32
  }
  mask(%qpos: index, %kpos: index, %head: index, %cap: f32) {
    %keep = arith.cmpi sle, %kpos, %qpos : index
    attn.yield %keep : i1
  }
}

// Causal attention with ALiBi: s -> s + slope[head] * (kpos - qpos).
attn.variant @alibi reduction softmax params(slope : f32 per_head) {
  logits(%s: f32, %qpos: index, %kpos: index, %head: index, %slope: f32) {
    %k = arith.index_cast %kpos : index to i64
    %q = arith.index_cast %qpos : index to i64
    %d = arith.subi %k, %q : i64
    %df = arith.sitofp %d : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32
    attn.yield %r : f32
  }
  mask(%qpos: index, %kpos: index, %head: index, %slope: f32) {
    %keep = arith.cmpi sle, %kpos, %qpos : index
    attn.yield %keep : i1
  }
}

// A bit-packed custom mask (little bit order, as numpy.packbits(...,
// bitorder="little")). Key kpos is visible to the query at qpos iff bit
// row0 + qpos * stride + kpos of `bits` is set. For a request whose [Lq, Lkv]
// mask starts at bit `offset`: stride = Lkv, row0 = offset - (Lkv - Lq) * Lkv.
attn.variant @custom_mask reduction softmax
    params(bits : tensor<?xi8> buffer, row0 : i64 per_request,
           stride : i64 per_request) {
  mask(%qpos: index, %kpos: index, %head: index, %bits: tensor<?xi8>,
       %row0: i64, %stride: i64) {
    %q = arith.index_cast %qpos : index to i64
    %k = arith.index_cast %kpos : index to i64
    %rowStart = arith.muli %q, %stride : i64
    %base = arith.addi %row0, %rowStart : i64
    %bit = arith.addi %base, %k : i64
    %c3 = arith.constant 3 : i64
    %c7 = arith.constant 7 : i64
    %byteIndex = arith.shrui %bit, %c3 : i64
    %byteIdx = arith.index_cast %byteIndex : i64 to index
    %byte = tensor.extract %bits[%byteIdx] : tensor<?xi8>
    %shift64 = arith.andi %bit, %c7 : i64
    %shift = arith.trunci %shift64 : i64 to i8
    %shifted = arith.shrui %byte, %shift : i8
    %keep = arith.trunci %shifted : i8 to i1
    attn.yield %keep : i1
  }
}

// Sigmoid attention (eq. 9): O = sum_j sigmoid(s_j + bias) v_j, unnormalised;
// states merge by summing.
attn.variant @sigmoid reduction sigmoid params(bias : f32 scalar) {
  logits(%s: f32, %qpos: index, %kpos: index, %head: index, %bias: f32) {
    %r = arith.addf %s, %bias : f32
    attn.yield %r : f32
  }
}

// Variants defined only here, in the tests: the runner interprets their hooks
// in float64 for the reference.

// Rotate-half RoPE for head_dim 64 on queries and keys, causal:
// i = d mod 32, theta = pos * 0.3 / (1 + i),
// d < 32: x cos - x_rot sin;  d >= 32: x cos + x_rot sin.
attn.variant @rope64 reduction softmax {
  query(%x: f32, %xr: f32, %d: index, %pos: index, %h: index) {
    %c32 = arith.constant 32 : index
    %lo = arith.cmpi ult, %d, %c32 : index
    %i = arith.remui %d, %c32 : index
    %i64 = arith.index_cast %i : index to i64
    %if = arith.sitofp %i64 : i64 to f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %if, %one : f32
    %p64 = arith.index_cast %pos : index to i64
    %pf = arith.sitofp %p64 : i64 to f32
    %k = arith.constant 0.3 : f32
    %pk = arith.mulf %pf, %k : f32
    %theta = arith.divf %pk, %den : f32
    %c = math.cos %theta : f32
    %s = math.sin %theta : f32
    %xc = arith.mulf %x, %c : f32
    %xs = arith.mulf %xr, %s : f32
    %minus = arith.subf %xc, %xs : f32
    %plus = arith.addf %xc, %xs : f32
    %r = arith.select %lo, %minus, %plus : f32
    attn.yield %r : f32
  }
  key(%x: f32, %xr: f32, %d: index, %pos: index, %h: index) {
    %c32 = arith.constant 32 : index
    %lo = arith.cmpi ult, %d, %c32 : index
    %i = arith.remui %d, %c32 : index
    %i64 = arith.index_cast %i : index to i64
    %if = arith.sitofp %i64 : i64 to f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %if, %one : f32
    %p64 = arith.index_cast %pos : index to i64
    %pf = arith.sitofp %p64 : i64 to f32
    %k = arith.constant 0.3 : f32
    %pk = arith.mulf %pf, %k : f32
    %theta = arith.divf %pk, %den : f32
    %c = math.cos %theta : f32
    %s = math.sin %theta : f32
    %xc = arith.mulf %x, %c : f32
    %xs = arith.mulf %xr, %s : f32
    %minus = arith.subf %xc, %xs : f32
    %plus = arith.addf %xc, %xs : f32
    %r = arith.select %lo, %minus, %plus : f32
    attn.yield %r : f32
  }
  mask(%q: index, %k: index, %h: index) {
    %keep = arith.cmpi sle, %k, %q : index
    attn.yield %keep : i1
  }
}

// Logits offset by +1000 / -1000: the same output as @plain, lse shifted;
// an unstable softmax would overflow or underflow to NaN / 0.
attn.variant @plus1000 reduction softmax {
  logits(%s: f32, %q: index, %k: index, %h: index) {
    %c = arith.constant 1000.0 : f32
    %r = arith.addf %s, %c : f32
    attn.yield %r : f32
  }
}
attn.variant @minus1000 reduction softmax {
  logits(%s: f32, %q: index, %k: index, %h: index) {
    %c = arith.constant -1000.0 : f32
    %r = arith.addf %s, %c : f32
    attn.yield %r : f32
  }
}

// Every parameter kind feeding logits and mask, plus an output transform:
// keys at an even distance from the query (per-request parity flip), a
// per-head temperature, a scalar bias, and o -> 2 o + 1 on the way out.
attn.variant @params_and_output reduction softmax
    params(flip : i64 per_request, temp : f32 per_head, bias : f32 scalar) {
  logits(%s: f32, %q: index, %k: index, %h: index,
         %flip: i64, %temp: f32, %bias: f32) {
    %t = arith.mulf %s, %temp : f32
    %r = arith.addf %t, %bias : f32
    attn.yield %r : f32
  }
  mask(%q: index, %k: index, %h: index, %flip: i64, %temp: f32, %bias: f32) {
    %qi = arith.index_cast %q : index to i64
    %ki = arith.index_cast %k : index to i64
    %dist = arith.subi %qi, %ki : i64
    %x = arith.addi %dist, %flip : i64
    %one = arith.constant 1 : i64
    %odd = arith.andi %x, %one : i64
    %zero = arith.constant 0 : i64
    %even = arith.cmpi eq, %odd, %zero : i64
    attn.yield %even : i1
  }
  output(%o: f32, %d: index, %h: index) {
    %two = arith.constant 2.0 : f32
    %one = arith.constant 1.0 : f32
    %t = arith.mulf %o, %two : f32
    %r = arith.addf %t, %one : f32
    attn.yield %r : f32
  }
}

// Sparsemax with a causal mask: no merge rule.
attn.variant @sparse reduction sparsemax {
  mask(%q: index, %k: index, %h: index) {
    %keep = arith.cmpi sle, %k, %q : index
    attn.yield %keep : i1
  }
}

// Signed conversions of i1 (true is -1 as a signed value): keys at even
// positions get s - 1.
attn.variant @i1_signed reduction softmax {
  logits(%s: f32, %q: index, %k: index, %h: index) {
    %c2 = arith.constant 2 : index
    %c0 = arith.constant 0 : index
    %r = arith.remui %k, %c2 : index
    %even = arith.cmpi eq, %r, %c0 : index
    %e = arith.extsi %even : i1 to i32
    %f = arith.sitofp %e : i32 to f32
    %t = arith.sitofp %even : i1 to f32
    %sum = arith.addf %f, %t : f32
    %half = arith.constant 0.5 : f32
    %b = arith.mulf %sum, %half : f32
    %out = arith.addf %s, %b : f32
    attn.yield %out : f32
  }
}

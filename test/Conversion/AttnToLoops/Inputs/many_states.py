"""Prints an attn function with one attention over N views (`views N`) or
one merge of N states (`merge N`), for the loop lowering's limits."""
import sys

kind, n = sys.argv[1], int(sys.argv[2])
view = "!attn.ragged_kv<heads = 1, head_dim = 2, f32>"
state = "!attn.state<heads = 1, head_dim = 2, @plain>"
out = "tensor<?x1x2xf32>, tensor<?x1xf32>"
q = "!attn.ragged_q<heads = 1, head_dim = 2, f32>"
if kind == "views":
    t = "tensor<?x1x2xf32>"
    i = "tensor<?xi32>"
    print(f"func.func @many_views(%qt: {t}, %qo: {i}, %k: {t}, %kv: {i}) "
          f"-> ({out}) {{")
    print(f"  %q = attn.ragged_q %qt, %qo : {t} -> {q}")
    print(f"  %v = attn.ragged_kv %k, %k, %kv : {t}, {t} -> {view}")
    views = ", ".join(["%v"] * n)
    print(f"  %s = attn.attention @plain(%q, {views}) "
          f"{{num_qo_heads = 1 : i64, num_kv_heads = 1 : i64}} : "
          f"{q}, {', '.join([view] * n)} -> {state}")
else:
    print(f"func.func @many_states(%n: index) -> ({out}) {{")
    print(f"  %a = attn.empty_state @plain %n : {state}")
    print(f"  %s = attn.merge {', '.join(['%a'] * n)} : "
          f"{', '.join([state] * n)} -> {state}")
print(f"  %o, %l = attn.finalize %s : {state} -> {out}")
print(f"  return %o, %l : {out}\n}}")

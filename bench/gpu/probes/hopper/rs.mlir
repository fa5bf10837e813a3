module attributes {gpu.container_module} {
 gpu.module @k {
  gpu.func @rs(%a0: i32, %a1: i32, %a2: i32, %a3: i32, %db: i64, %out: !llvm.ptr<1>) kernel attributes {nvvm.maxntid = array<i32: 128, 1, 1>} {
   %z = arith.constant 0.0 : f32
   %one = arith.constant 1 : i32
   %d0 = arith.addf %z, %z : f32
   %d1 = arith.addf %z, %z : f32
   %d2 = arith.addf %z, %z : f32
   %d3 = arith.addf %z, %z : f32
   %d4 = arith.addf %z, %z : f32
   %d5 = arith.addf %z, %z : f32
   %d6 = arith.addf %z, %z : f32
   %d7 = arith.addf %z, %z : f32
   %d8 = arith.addf %z, %z : f32
   %d9 = arith.addf %z, %z : f32
   %d10 = arith.addf %z, %z : f32
   %d11 = arith.addf %z, %z : f32
   %d12 = arith.addf %z, %z : f32
   %d13 = arith.addf %z, %z : f32
   %d14 = arith.addf %z, %z : f32
   %d15 = arith.addf %z, %z : f32
   %d16 = arith.addf %z, %z : f32
   %d17 = arith.addf %z, %z : f32
   %d18 = arith.addf %z, %z : f32
   %d19 = arith.addf %z, %z : f32
   %d20 = arith.addf %z, %z : f32
   %d21 = arith.addf %z, %z : f32
   %d22 = arith.addf %z, %z : f32
   %d23 = arith.addf %z, %z : f32
   %d24 = arith.addf %z, %z : f32
   %d25 = arith.addf %z, %z : f32
   %d26 = arith.addf %z, %z : f32
   %d27 = arith.addf %z, %z : f32
   %d28 = arith.addf %z, %z : f32
   %d29 = arith.addf %z, %z : f32
   %d30 = arith.addf %z, %z : f32
   %d31 = arith.addf %z, %z : f32
   %d32 = arith.addf %z, %z : f32
   %d33 = arith.addf %z, %z : f32
   %d34 = arith.addf %z, %z : f32
   %d35 = arith.addf %z, %z : f32
   %d36 = arith.addf %z, %z : f32
   %d37 = arith.addf %z, %z : f32
   %d38 = arith.addf %z, %z : f32
   %d39 = arith.addf %z, %z : f32
   %d40 = arith.addf %z, %z : f32
   %d41 = arith.addf %z, %z : f32
   %d42 = arith.addf %z, %z : f32
   %d43 = arith.addf %z, %z : f32
   %d44 = arith.addf %z, %z : f32
   %d45 = arith.addf %z, %z : f32
   %d46 = arith.addf %z, %z : f32
   %d47 = arith.addf %z, %z : f32
   %d48 = arith.addf %z, %z : f32
   %d49 = arith.addf %z, %z : f32
   %d50 = arith.addf %z, %z : f32
   %d51 = arith.addf %z, %z : f32
   %d52 = arith.addf %z, %z : f32
   %d53 = arith.addf %z, %z : f32
   %d54 = arith.addf %z, %z : f32
   %d55 = arith.addf %z, %z : f32
   %d56 = arith.addf %z, %z : f32
   %d57 = arith.addf %z, %z : f32
   %d58 = arith.addf %z, %z : f32
   %d59 = arith.addf %z, %z : f32
   %d60 = arith.addf %z, %z : f32
   %d61 = arith.addf %z, %z : f32
   %d62 = arith.addf %z, %z : f32
   %d63 = arith.addf %z, %z : f32
   nvvm.wgmma.fence.aligned
   nvvm.inline_ptx "{ .reg .pred p; setp.ne.b32 p, $69, 0; wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60, $61, $62, $63}, {$64, $65, $66, $67}, $68, p, 1, 1, 1; }" ro(%a0, %a1, %a2, %a3, %db, %one : i32, i32, i32, i32, i64, i32) rw(%d0, %d1, %d2, %d3, %d4, %d5, %d6, %d7, %d8, %d9, %d10, %d11, %d12, %d13, %d14, %d15, %d16, %d17, %d18, %d19, %d20, %d21, %d22, %d23, %d24, %d25, %d26, %d27, %d28, %d29, %d30, %d31, %d32, %d33, %d34, %d35, %d36, %d37, %d38, %d39, %d40, %d41, %d42, %d43, %d44, %d45, %d46, %d47, %d48, %d49, %d50, %d51, %d52, %d53, %d54, %d55, %d56, %d57, %d58, %d59, %d60, %d61, %d62, %d63 : f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
   nvvm.wgmma.commit.group.sync.aligned
   nvvm.wgmma.wait.group.sync.aligned 0
   llvm.store %d5, %out : f32, !llvm.ptr<1>
   gpu.return
  }
 }
}
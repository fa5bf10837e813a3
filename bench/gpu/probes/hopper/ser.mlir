!acc64 = !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @ss(%da: i64, %db: i64, %out: !llvm.ptr<1>) kernel attributes {nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32} {
      %z = arith.constant 0.0 : f32
      %u = llvm.mlir.poison : !acc64
      %acc0 = llvm.insertvalue %z, %u[0] : !acc64
      nvvm.setmaxregister increase 240
      nvvm.wgmma.fence.aligned
      %r = nvvm.wgmma.mma_async %da, %db, %acc0, #nvvm.shape<m = 64, n = 64, k = 16>, D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>], B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc64 -> !acc64
      %e0 = llvm.extractvalue %r[5] : !acc64
      %e1 = llvm.fadd %e0, %z : f32
      %acc1 = llvm.insertvalue %e1, %r[5] : !acc64
      %r2 = nvvm.wgmma.mma_async %da, %db, %acc1, #nvvm.shape<m = 64, n = 64, k = 16>, D [<f32>, #nvvm.wgmma_scale_out<one>], A [<bf16>, #nvvm.wgmma_scale_in<one>, <row>], B [<bf16>, #nvvm.wgmma_scale_in<one>, <col>] : !acc64 -> !acc64
      nvvm.wgmma.commit.group.sync.aligned
      nvvm.wgmma.wait.group.sync.aligned 0
      %e = llvm.extractvalue %r2[5] : !acc64
      llvm.store %e, %out : f32, !llvm.ptr<1>
      %p = nvvm.elect.sync -> i1
      nvvm.fence.proxy { kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta> }
      gpu.return
    }
  }
}

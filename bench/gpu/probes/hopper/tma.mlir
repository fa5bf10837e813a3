module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @tma(%map: !llvm.ptr, %x: i32, %y: i32) kernel attributes {nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32} {
      %smem = llvm.mlir.addressof @buf : !llvm.ptr<3>
      %bar = llvm.getelementptr %smem[0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i64
      %dst = llvm.getelementptr %smem[1024] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
      %dstc = llvm.addrspacecast %dst : !llvm.ptr<3> to !llvm.ptr<7>
      %one = llvm.mlir.constant(1 : i32) : i32
      %tx = llvm.mlir.constant(16384 : i32) : i32
      %ticks = llvm.mlir.constant(10000000 : i32) : i32
      %par = llvm.mlir.constant(0 : i32) : i32
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %wg = llvm.udiv %tid, %c0 : i32
      nvvm.mbarrier.init %bar, %one : !llvm.ptr<3>, i32
      nvvm.fence.proxy { kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta> }
      nvvm.barrier
      nvvm.setmaxregister decrease 40
      %e = nvvm.elect.sync -> i1
      llvm.cond_br %e, ^issue, ^wait
    ^issue:
      nvvm.mbarrier.arrive.expect_tx %bar, %tx : !llvm.ptr<3>, i32
      nvvm.cp.async.bulk.tensor.shared.cluster.global %dstc, %map, %bar, box[%c0, %x, %y] : !llvm.ptr<7>, !llvm.ptr
      llvm.br ^wait
    ^wait:
      nvvm.mbarrier.try_wait.parity %bar, %par, %ticks : !llvm.ptr<3>, i32, i32
      %n256 = llvm.mlir.constant(256 : i32) : i32
      %id1 = llvm.mlir.constant(1 : i32) : i32
      nvvm.barrier id = %id1 number_of_threads = %n256
      nvvm.barrier.arrive id = %id1 number_of_threads = %n256
      gpu.return
    }
    llvm.mlir.global internal @buf() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<33792 x i8>
  }
}

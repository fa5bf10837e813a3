// Pass options out of range are reported, not used.
// RUN: not flashir-opt %s -convert-attn-to-gpu=warps=0 2>&1 | FileCheck %s
// RUN: not flashir-opt %s -convert-attn-to-gpu=unroll=17 2>&1 | FileCheck %s --check-prefix=UNROLL
// RUN: not flashir-opt %s -convert-attn-to-gpu=chip=sm_70 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not flashir-opt %s -convert-attn-to-gpu=stages=1 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_75 stages=4" 2>&1 | FileCheck %s --check-prefix=TURING
// RUN: not flashir-opt %s -convert-attn-to-gpu=tensor-cores=2 2>&1 | FileCheck %s --check-prefix=TC-VALUE
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_75 tensor-cores=1" 2>&1 | FileCheck %s --check-prefix=TC-TURING
// RUN: not flashir-opt %s -convert-attn-to-gpu="tensor-cores=1 stages=0" 2>&1 | FileCheck %s --check-prefix=TC-STAGES
// RUN: not flashir-opt %s -convert-attn-to-gpu=bulk-copy=3 2>&1 | FileCheck %s --check-prefix=BULK-VALUE
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_80 bulk-copy=1" 2>&1 | FileCheck %s --check-prefix=BULK-AMPERE
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_90a tensor-cores=0 bulk-copy=1" 2>&1 | FileCheck %s --check-prefix=BULK-SIMT
// RUN: not flashir-bundle %s -o %t 2>&1 | FileCheck %s --check-prefix=BUNDLE
// RUN: not flashir-bundle %s -o %t --chips=sm_70 2>&1 | FileCheck %s --check-prefix=BUNDLE-CHIP
// RUN: not flashir-bundle %s -o %t --schedule=no-such-pass 2>&1 | FileCheck %s --check-prefix=BUNDLE-SCHEDULE

// CHECK: convert-attn-to-gpu: warps must be in 1..32 and unroll in 1..16, got warps = 0, unroll = 2
// UNROLL: got warps = 4, unroll = 17
// CHIP: convert-attn-to-gpu: unknown chip 'sm_70'; expected one of
// STAGES: convert-attn-to-gpu: stages must be -1 (by chip), 0 (register double buffering) or 2..8, got 1
// TURING: convert-attn-to-gpu: sm_75 has no cp.async; stages = 4 needs sm_80 or newer (use stages=0)
// TC-VALUE: convert-attn-to-gpu: tensor-cores must be -1 (by chip), 0 or 1, got 2
// TC-TURING: convert-attn-to-gpu: sm_75 has no bf16 mma.sync m16n8k16 / cp.async; tensor-cores = 1 needs sm_80 or newer (use tensor-cores=0)
// TC-STAGES: convert-attn-to-gpu: the tensor-core kernel stages K/V through a cp.async ring; stages must be 2..8 (or -1), got 0
// BULK-VALUE: convert-attn-to-gpu: bulk-copy must be -1 (by chip), 0 or 1, got 3
// BULK-AMPERE: convert-attn-to-gpu: bulk-copy = 1 needs the tensor-core kernel on a chip with cp.async.bulk (sm_90a); sm_80 has none
// BULK-SIMT: convert-attn-to-gpu: bulk-copy = 1 needs the tensor-core kernel on a chip with cp.async.bulk (sm_90a); sm_90a uses CUDA cores here
// BUNDLE: flashir-bundle: no attention to compile in
// BUNDLE-CHIP: flashir-bundle: unknown chip 'sm_70'; expected one of
// BUNDLE-SCHEDULE: flashir-bundle: bad --schedule:

func.func @nothing() {
  return
}

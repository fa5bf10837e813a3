// Pass options out of range are reported, not used.
// RUN: not flashir-opt %s -convert-attn-to-gpu=warps=0 2>&1 | FileCheck %s
// RUN: not flashir-opt %s -convert-attn-to-gpu=unroll=17 2>&1 | FileCheck %s --check-prefix=UNROLL
// RUN: not flashir-opt %s -convert-attn-to-gpu=chip=sm_70 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not flashir-opt %s -convert-attn-to-gpu=stages=1 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_75 stages=4" 2>&1 | FileCheck %s --check-prefix=TURING
// RUN: not flashir-bundle %s -o %t 2>&1 | FileCheck %s --check-prefix=BUNDLE
// RUN: not flashir-bundle %s -o %t --chips=sm_70 2>&1 | FileCheck %s --check-prefix=BUNDLE-CHIP
// RUN: not flashir-bundle %s -o %t --schedule=no-such-pass 2>&1 | FileCheck %s --check-prefix=BUNDLE-SCHEDULE

// CHECK: convert-attn-to-gpu: warps must be in 1..32 and unroll in 1..16, got warps = 0, unroll = 2
// UNROLL: got warps = 4, unroll = 17
// CHIP: convert-attn-to-gpu: unknown chip 'sm_70'; expected one of
// STAGES: convert-attn-to-gpu: stages must be -1 (by chip), 0 (register double buffering) or 2..8, got 1
// TURING: convert-attn-to-gpu: sm_75 has no cp.async; stages = 4 needs sm_80 or newer (use stages=0)
// BUNDLE: flashir-bundle: no attention to compile in
// BUNDLE-CHIP: flashir-bundle: unknown chip 'sm_70'; expected one of
// BUNDLE-SCHEDULE: flashir-bundle: bad --schedule:

func.func @nothing() {
  return
}

// Pass options out of range are reported, not used.
// RUN: not flashir-opt %s -convert-attn-to-gpu=warps=0 2>&1 | FileCheck %s
// RUN: not flashir-opt %s -convert-attn-to-gpu=unroll=17 2>&1 | FileCheck %s --check-prefix=UNROLL
// RUN: not flashir-bundle %s -o %t 2>&1 | FileCheck %s --check-prefix=BUNDLE

// CHECK: convert-attn-to-gpu: warps must be in 1..32 and unroll in 1..16, got warps = 0, unroll = 4
// UNROLL: got warps = 4, unroll = 17
// BUNDLE: flashir-bundle: no attention to compile in

func.func @nothing() {
  return
}

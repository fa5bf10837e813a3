// Pass options out of range or of unknown values are reported, not used.
// RUN: not flashir-opt %s -convert-attn-to-gpu=warps=0 2>&1 | FileCheck %s
// RUN: not flashir-opt %s -convert-attn-to-gpu=unroll=17 2>&1 | FileCheck %s --check-prefix=UNROLL
// RUN: not flashir-opt %s -convert-attn-to-gpu=chip=sm_70 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not flashir-opt %s -convert-attn-to-gpu=stages=1 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_75 stages=4" 2>&1 | FileCheck %s --check-prefix=TURING
// RUN: not flashir-opt %s -convert-attn-to-gpu=design=tensor 2>&1 | FileCheck %s --check-prefix=DESIGN-VALUE
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_75 design=mma-sync" 2>&1 | FileCheck %s --check-prefix=MMA-TURING
// RUN: not flashir-opt %s -convert-attn-to-gpu="design=mma-sync stages=0" 2>&1 | FileCheck %s --check-prefix=MMA-STAGES
// RUN: not flashir-opt %s -convert-attn-to-gpu=copy=1 2>&1 | FileCheck %s --check-prefix=COPY-VALUE
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_80 copy=tma" 2>&1 | FileCheck %s --check-prefix=TMA-AMPERE
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_80 copy=bulk" 2>&1 | FileCheck %s --check-prefix=BULK-AMPERE
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_75 copy=bulk" 2>&1 | FileCheck %s --check-prefix=BULK-TURING
// RUN: not flashir-opt %s -convert-attn-to-gpu="chip=sm_90a design=simt copy=tma" 2>&1 | FileCheck %s --check-prefix=TMA-SIMT
// RUN: not flashir-bundle %s -o %t 2>&1 | FileCheck %s --check-prefix=BUNDLE
// RUN: not flashir-bundle %s -o %t --chips=sm_70 2>&1 | FileCheck %s --check-prefix=BUNDLE-CHIP
// RUN: not flashir-bundle %s -o %t --schedule=no-such-pass 2>&1 | FileCheck %s --check-prefix=BUNDLE-SCHEDULE
// RUN: not flashir-bundle %s -o %t --design=1 2>&1 | FileCheck %s --check-prefix=BUNDLE-DESIGN
// RUN: not flashir-bundle %s -o %t --copy=0 2>&1 | FileCheck %s --check-prefix=BUNDLE-COPY
// RUN: flashir-bundle --help | FileCheck %s --check-prefix=BUNDLE-HELP
// RUN: not flashir-opt %s -attn-to-ptx="chip=sm_86 copy=bulk" 2>&1 | FileCheck %s --check-prefix=PTX-BULK

// CHECK: convert-attn-to-gpu: warps must be in 1..32 (or -1) and unroll in 1..16, got warps = 0, unroll = 2
// UNROLL: got warps = -1, unroll = 17
// CHIP: convert-attn-to-gpu: unknown chip 'sm_70'; expected one of
// STAGES: convert-attn-to-gpu: stages must be -1 (by chip), 0 (register double buffering) or 2..8, got 1
// TURING: convert-attn-to-gpu: sm_75 has no cp.async; stages = 4 needs sm_80 or newer (use stages=0)
// DESIGN-VALUE: for the --design option: Cannot find option named 'tensor'!
// MMA-TURING: convert-attn-to-gpu: sm_75 has no bf16 mma.sync m16n8k16 / cp.async; design=mma-sync needs sm_80 or newer (use design=simt)
// MMA-STAGES: convert-attn-to-gpu: the tensor-core kernel stages K/V through a cp.async ring; stages must be 2..8 (or -1), got 0
// COPY-VALUE: for the --copy option: Cannot find option named '1'!
// TMA-AMPERE: convert-attn-to-gpu: copy=tma needs the mma-sync design on a chip with cp.async.bulk (sm_90a); sm_80 has none
// BULK-AMPERE: convert-attn-to-gpu: copy=bulk needs the mma-sync design on a chip with cp.async.bulk (sm_90a); sm_80 has none
// BULK-TURING: convert-attn-to-gpu: copy=bulk needs the mma-sync design on a chip with cp.async.bulk (sm_90a); sm_75 has none
// TMA-SIMT: convert-attn-to-gpu: copy=tma needs the mma-sync design on a chip with cp.async.bulk (sm_90a); design=simt uses CUDA cores
// BUNDLE: flashir-bundle: no attention to compile in
// BUNDLE-CHIP: flashir-bundle: unknown chip 'sm_70'; expected one of
// BUNDLE-SCHEDULE: flashir-bundle: bad --schedule:
// BUNDLE-DESIGN: flashir-bundle: for the --design option: Cannot find option named '1'!
// BUNDLE-COPY: flashir-bundle: for the --copy option: Cannot find option named '0'!
// BUNDLE-HELP: --copy=<value>
// BUNDLE-HELP-NEXT: =auto
// BUNDLE-HELP-NEXT: =cp-async
// BUNDLE-HELP-NEXT: =bulk
// BUNDLE-HELP-NEXT: =tma
// BUNDLE-HELP: --design=<value>
// BUNDLE-HELP-NEXT: =auto
// BUNDLE-HELP-NEXT: =simt
// BUNDLE-HELP-NEXT: =mma-sync
// PTX-BULK: convert-attn-to-gpu: copy=bulk needs the mma-sync design on a chip with cp.async.bulk (sm_90a); sm_86 has none

func.func @nothing() {
  return
}

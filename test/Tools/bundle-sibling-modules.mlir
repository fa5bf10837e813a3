// Eight sibling modules that use a standard variant: the threaded verifier
// resolves @causal in all of them at once while the standard library is parsed.
// A lock held across that parse deadlocked ~40% of runs with two modules
// under load (issue 22), less on an idle machine: eight modules and 30 runs
// raise the odds; the unit test AttnDialectThreadingTest is the reliable one.

// RUN: %python %S/Inputs/repeat.py 30 20 -- flashir-bundle %s -o %t --chips=sm_90a | FileCheck %s
// CHECK: 30 runs: status 1 x 30; 0 timed out, 0 killed by a signal
// RUN: not flashir-bundle %s -o %t --chips=sm_90a 2>&1 | FileCheck %s --check-prefix=DIAG
// DIAG: no attention to compile

module {
  func.func @a(%n: index) -> !attn.state<heads = 1, head_dim = 2, @causal> {
    %s = attn.empty_state @causal %n : !attn.state<heads = 1, head_dim = 2, @causal>
    return %s : !attn.state<heads = 1, head_dim = 2, @causal>
  }
}
module {
  func.func @a(%n: index) -> !attn.state<heads = 1, head_dim = 2, @causal> {
    %s = attn.empty_state @causal %n : !attn.state<heads = 1, head_dim = 2, @causal>
    return %s : !attn.state<heads = 1, head_dim = 2, @causal>
  }
}
module {
  func.func @a(%n: index) -> !attn.state<heads = 1, head_dim = 2, @causal> {
    %s = attn.empty_state @causal %n : !attn.state<heads = 1, head_dim = 2, @causal>
    return %s : !attn.state<heads = 1, head_dim = 2, @causal>
  }
}
module {
  func.func @a(%n: index) -> !attn.state<heads = 1, head_dim = 2, @causal> {
    %s = attn.empty_state @causal %n : !attn.state<heads = 1, head_dim = 2, @causal>
    return %s : !attn.state<heads = 1, head_dim = 2, @causal>
  }
}
module {
  func.func @a(%n: index) -> !attn.state<heads = 1, head_dim = 2, @causal> {
    %s = attn.empty_state @causal %n : !attn.state<heads = 1, head_dim = 2, @causal>
    return %s : !attn.state<heads = 1, head_dim = 2, @causal>
  }
}
module {
  func.func @a(%n: index) -> !attn.state<heads = 1, head_dim = 2, @causal> {
    %s = attn.empty_state @causal %n : !attn.state<heads = 1, head_dim = 2, @causal>
    return %s : !attn.state<heads = 1, head_dim = 2, @causal>
  }
}
module {
  func.func @a(%n: index) -> !attn.state<heads = 1, head_dim = 2, @causal> {
    %s = attn.empty_state @causal %n : !attn.state<heads = 1, head_dim = 2, @causal>
    return %s : !attn.state<heads = 1, head_dim = 2, @causal>
  }
}
module {
  func.func @a(%n: index) -> !attn.state<heads = 1, head_dim = 2, @causal> {
    %s = attn.empty_state @causal %n : !attn.state<heads = 1, head_dim = 2, @causal>
    return %s : !attn.state<heads = 1, head_dim = 2, @causal>
  }
}

# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FlashIR"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.flashir_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%flashir_src_root", config.flashir_src_root))
config.substitutions.append(("%flashir_tools_dir", config.flashir_tools_dir))
# Sanitizer builds: failures are fatal, reports go to stderr (lit keeps them).
for var in ["ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS",
            "ASAN_SYMBOLIZER_PATH"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.flashir_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("flashir-opt", unresolved="fatal"),
    ToolSubst("flashir-run", unresolved="fatal"),
    ToolSubst("flashir-bundle", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
# mlir-runner and its printing library (mlir-22-tools, libmlir-22-dev).
llvm_config.add_tool_substitutions([ToolSubst("mlir-runner", unresolved="fatal")],
                                   [config.llvm_tools_dir])
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(os.path.dirname(config.llvm_tools_dir), "lib",
                  "libmlir_c_runner_utils.so")))
# `not`, `count` and `split-file` from LLVM's tools (the external shell has
# no builtin).
llvm_config.add_tool_substitutions(
    [ToolSubst("not", unresolved="fatal"), ToolSubst("count", unresolved="fatal"),
     ToolSubst("split-file", unresolved="fatal")],
    [config.llvm_tools_dir])

# ptxas (CUDA toolkit, no GPU needed): the NVIDIA tests assemble what they emit.
import shutil
ptxas = None
for candidate in [os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "ptxas"),
                  "/usr/local/cuda/bin/ptxas", shutil.which("ptxas")]:
    if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        ptxas = candidate
        break
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%{ptxas}", ptxas))
else:
    lit_config.note("ptxas not found: PTX assembly tests are unsupported")

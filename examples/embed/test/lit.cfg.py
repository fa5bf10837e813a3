# lit suite of the embedding example; scripts/test-embed.sh runs it with
#   lit examples/embed/test --param embed_opt=... --param filecheck=...
#       [--param toolkit=<CUDA toolkit with nvvm/libdevice>]
import os

import lit.formats

config.name = "flashir-embed"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = lit_config.params.get("exec_root", config.test_source_root)
config.substitutions.append(("%embed-opt", lit_config.params["embed_opt"]))
config.substitutions.append(("%FileCheck", lit_config.params["filecheck"]))
toolkit = lit_config.params.get("toolkit", "")
if toolkit and os.path.isdir(os.path.join(toolkit, "nvvm", "libdevice")):
    config.available_features.add("libdevice")
    config.substitutions.append(("%toolkit", toolkit))

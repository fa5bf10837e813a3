//===- MLIRCAPIIR.cpp - MLIR's C API as a shared library ------------------===//
//
// No code of its own: the FlashIRMLIRCAPI shared library is MLIR's C API
// archive (libMLIRCAPIIR.a, whole) linked over libMLIR.so; see
// CMakeLists.txt for why.
//
//===----------------------------------------------------------------------===//

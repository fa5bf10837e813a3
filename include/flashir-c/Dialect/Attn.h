/*===- flashir-c/Dialect/Attn.h - C API of the attn dialect -------*- C -*-===*\
|*                                                                            *|
|* For hosts that drive MLIR through its C API (Python bindings, other       *|
|* languages): the attn dialect handle, FlashIR's passes and pipelines, and  *|
|* buildFlashIRPipeline into an MlirOpPassManager.                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FLASHIR_C_DIALECT_ATTN_H
#define FLASHIR_C_DIALECT_ATTN_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mlirGetDialectHandle__attn__(): register/load the attn dialect. */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Attn, attn);

/* Every upstream dialect and extension plus attn (what flashir-opt has). */
MLIR_CAPI_EXPORTED void flashirRegisterAllDialects(MlirDialectRegistry registry);

/* FlashIR's passes and named pipelines (and the upstream passes they use). */
MLIR_CAPI_EXPORTED void flashirRegisterPasses(void);

/* Adds FlashIR's whole pipeline to `pm` (see FlashIRPipelineOptions):
 * target "cpu" or "nvidia"; chip e.g. "sm_90a"; chunk_size -1 (no split-KV),
 * 0 (runtime chunks) or > 0; raise_from_linalg; toolkit: CUDA toolkit
 * directory for libdevice (NVIDIA; may be empty). Fails on a bad target. */
MLIR_CAPI_EXPORTED MlirLogicalResult flashirBuildPipeline(
    MlirOpPassManager pm, MlirStringRef target, MlirStringRef chip,
    int64_t chunk_size, bool raise_from_linalg, MlirStringRef toolkit);

#ifdef __cplusplus
}
#endif

#endif /* FLASHIR_C_DIALECT_ATTN_H */

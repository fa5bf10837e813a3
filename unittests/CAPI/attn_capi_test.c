/*===- attn_capi_test.c - the MLIR-style C API, from C ---------------------===*\
|* Registers everything through the C API, parses linalg attention, builds   *|
|* FlashIR's CPU pipeline with raising into an MlirPassManager, runs it and   *|
|* checks the result is LLVM-dialect code. Exit status 0 on success.         *|
\*===----------------------------------------------------------------------===*/

#include "flashir-c/Dialect/Attn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kProgram =
    "func.func @attention(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, "
    "%v: tensor<2x5x8xf32>) -> tensor<2x3x8xf32> {\n"
    "  %zero = arith.constant 0.0 : f32\n"
    "  %e0 = tensor.empty() : tensor<2x3x5xf32>\n"
    "  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x3x5xf32>) -> "
    "tensor<2x3x5xf32>\n"
    "  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> "
    "(b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, "
    "k) -> (b, m, n)>] ins(%q, %k : tensor<2x3x8xf32>, tensor<2x5x8xf32>) "
    "outs(%s0 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>\n"
    "  %p = linalg.softmax dimension(2) ins(%s : tensor<2x3x5xf32>) outs(%e0 "
    ": tensor<2x3x5xf32>) -> tensor<2x3x5xf32>\n"
    "  %e1 = tensor.empty() : tensor<2x3x8xf32>\n"
    "  %o0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x3x8xf32>) -> "
    "tensor<2x3x8xf32>\n"
    "  %o = linalg.batch_matmul ins(%p, %v : tensor<2x3x5xf32>, "
    "tensor<2x5x8xf32>) outs(%o0 : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>\n"
    "  return %o : tensor<2x3x8xf32>\n"
    "}\n";

struct Buffer {
  char *data;
  size_t size;
};

static void append(MlirStringRef text, void *userData) {
  struct Buffer *b = (struct Buffer *)userData;
  b->data = (char *)realloc(b->data, b->size + text.length + 1);
  memcpy(b->data + b->size, text.data, text.length);
  b->size += text.length;
  b->data[b->size] = '\0';
}

static int fail(const char *what) {
  fprintf(stderr, "attn C API test: %s\n", what);
  return 1;
}

int main(void) {
  MlirStringRef ns =
      mlirDialectHandleGetNamespace(mlirGetDialectHandle__attn__());
  if (ns.length != 4 || strncmp(ns.data, "attn", 4) != 0)
    return fail("the dialect handle's namespace is not attn");

  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  flashirRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(ctx);
  flashirRegisterPasses();

  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kProgram));
  if (mlirModuleIsNull(module))
    return fail("parsing failed");

  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  MlirStringRef none = mlirStringRefCreateFromCString("");
  if (!mlirLogicalResultIsFailure(flashirBuildPipeline(
          opm, mlirStringRefCreateFromCString("tpu"), none, -1, true, none)))
    return fail("an unknown target was accepted");
  if (mlirLogicalResultIsFailure(flashirBuildPipeline(
          opm, mlirStringRefCreateFromCString("cpu"),
          mlirStringRefCreateFromCString("sm_90a"), -1, true, none)))
    return fail("building the CPU pipeline failed");
  if (mlirLogicalResultIsFailure(
          mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module))))
    return fail("the pipeline failed");

  struct Buffer out = {NULL, 0};
  mlirOperationPrint(mlirModuleGetOperation(module), append, &out);
  int ok = out.data && strstr(out.data, "llvm.func @attention") &&
           !strstr(out.data, "linalg.softmax") &&
           !strstr(out.data, "attn.attention");
  free(out.data);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  if (!ok)
    return fail("the result is not LLVM-dialect code for @attention");
  printf("attn C API: dialect handle, registration, raise + CPU pipeline OK\n");
  return 0;
}

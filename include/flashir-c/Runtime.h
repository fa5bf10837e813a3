/*===- flashir-c/Runtime.h - C API of the FlashIR runtime ---------*- C -*-===*\
|*                                                                            *|
|* Planned split-KV decode (plan/run) for C callers and language bindings    *|
|* (python/flashir uses it through ctypes). No MLIR, no CUDA headers: the    *|
|* CUDA driver is loaded at run time. Every function returns 0 on success or *|
|* a FlashIRStatus code; flashirLastError() then describes the failure.      *|
|* Handles live on the device of the context current on the creating thread *|
|* (PyTorch's current device), else on device 0; call them with it current. *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FLASHIR_C_RUNTIME_H
#define FLASHIR_C_RUNTIME_H

#include <stdint.h>

#if defined(__GNUC__)
#define FLASHIR_C_EXPORT __attribute__((visibility("default")))
#else
#define FLASHIR_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Mirrors flashir::runtime::StatusCode. */
enum FlashIRStatus {
  FLASHIR_OK = 0,
  FLASHIR_INVALID_ARGUMENT = 1,
  FLASHIR_OUT_OF_RANGE = 2,
  FLASHIR_CAPACITY_EXCEEDED = 3
};

/* The message of the calling thread's last failure ("" if none). */
FLASHIR_C_EXPORT const char *flashirLastError(void);

typedef struct FlashIRSplitKV FlashIRSplitKV;

/* Loads the split-KV kernel pair `decode_kernel` / `merge_kernel` from the
 * bundle directory for `chip` (e.g. "sm_90a"; its cubin, or PTX the driver
 * compiles) and allocates the workspace for the capacity. `num_ctas`: CTAs
 * per KV head the GPU runs at once (the planner's C); <= 0: the decode
 * kernel's resident CTAs (driver occupancy x SMs) / KV heads. `max_chunks`
 * <= 0: enough for any plan with that C (maxChunksFor). */
FLASHIR_C_EXPORT int flashirSplitKVCreate(
    const char *bundle_dir, const char *chip, const char *decode_kernel,
    const char *merge_kernel, int64_t max_requests, int64_t max_chunks,
    int64_t max_query_rows_per_request, int64_t num_ctas, FlashIRSplitKV **out);

/* Kernel shape read from the bundle. */
FLASHIR_C_EXPORT int flashirSplitKVShape(const FlashIRSplitKV *decode,
                                         int64_t *num_qo_heads,
                                         int64_t *num_kv_heads,
                                         int64_t *head_dim, int64_t *page_size);

/* Validates and plans a batch (host int32 arrays: qo_indptr[batch + 1],
 * kv_indptr[batch + 1], kv_indices[kv_indptr[batch]],
 * last_page_len[batch]) over a pool of `num_pages` pages, and copies the
 * metadata to the device on `stream` (a CUstream / cudaStream_t; 0 = the
 * default stream). `num_chunks` (optional) receives the plan's chunk count. */
FLASHIR_C_EXPORT int
flashirSplitKVPlan(FlashIRSplitKV *decode, const int32_t *qo_indptr,
                   const int32_t *kv_indptr, const int32_t *kv_indices,
                   const int32_t *last_page_len, int64_t batch,
                   int64_t num_pages, void *stream, int64_t *num_chunks);

/* Runs the planned step: device pointers q [rows, Hq, D], k_pool and v_pool
 * [num_pages, page_size, Hkv, D], kv_indices [num_indices] (int32), out
 * [rows, Hq, D], lse [rows, Hq] (f32), all at fixed addresses if the call
 * is captured in a CUDA graph (`capacity_grids` = 1 then). */
FLASHIR_C_EXPORT int
flashirSplitKVRun(FlashIRSplitKV *decode, void *q, void *k_pool, void *v_pool,
                  int64_t num_pages, void *kv_indices, int64_t num_indices,
                  void *out, void *lse, void *stream, int capacity_grids);

/* A variant parameter of a run, in the variant's declaration order: a device
 * pointer and element count for tensor parameters (per-request, per-head,
 * buffer), the value for scalars (`scalar` for f32, `integer` for i32 and
 * i64). */
typedef struct FlashIRParam {
  void *pointer;
  int64_t size;
  float scalar;
  int64_t integer;
} FlashIRParam;

/* flashirSplitKVRun with the variant's parameters (`num_params` of them at
 * `params`; checked against the kernels' variant: count, kinds and sizes). */
FLASHIR_C_EXPORT int
flashirSplitKVRunWithParams(FlashIRSplitKV *decode, void *q, void *k_pool,
                            void *v_pool, int64_t num_pages, void *kv_indices,
                            int64_t num_indices, void *out, void *lse,
                            const FlashIRParam *params, int64_t num_params,
                            void *stream, int capacity_grids);

FLASHIR_C_EXPORT void flashirSplitKVDestroy(FlashIRSplitKV *decode);

/* Shared-prefix (cascade) decode: one-row requests that share a prefix (see
 * flashir/Runtime/Cascade.h). */
typedef struct FlashIRCascade FlashIRCascade;

/* Loads the split-KV prefill kernel `prefill_kernel` of `prefill_bundle_dir`
 * and the split-KV decode pair `decode_kernel` / `merge_kernel` of
 * `decode_bundle_dir` for `chip`. `prefix_chunks` > 0: every step's prefix
 * chunks; <= 0: a capacity of one wave of the prefill kernel (at least 2),
 * each step planning ceil(prefix tokens / 256) of them (at least 2). */
FLASHIR_C_EXPORT int
flashirCascadeCreate(const char *prefill_bundle_dir, const char *prefill_kernel,
                     const char *decode_bundle_dir, const char *decode_kernel,
                     const char *merge_kernel, const char *chip,
                     int64_t max_requests, int64_t prefix_chunks,
                     FlashIRCascade **out);

/* flashirCascadeCreate with the chunking spelled out: each step plans
 * ceil(prefix tokens / min_chunk_keys) prefix chunks (at least 2, within
 * the capacity; prefix_chunks > 0 fixes every step's) and ceil(longest
 * suffix / min_suffix_chunk_keys) chunks per suffix within a capacity of
 * suffix_chunks (flashirCascadeCreate: 256, 4, 64). The three must be >= 1. */
FLASHIR_C_EXPORT int flashirCascadeCreateWithChunks(
    const char *prefill_bundle_dir, const char *prefill_kernel,
    const char *decode_bundle_dir, const char *decode_kernel,
    const char *merge_kernel, const char *chip, int64_t max_requests,
    int64_t prefix_chunks, int64_t min_chunk_keys, int64_t suffix_chunks,
    int64_t min_suffix_chunk_keys, FlashIRCascade **out);

/* Kernel shape and the capacity's prefix chunks. */
FLASHIR_C_EXPORT int flashirCascadeShape(const FlashIRCascade *cascade,
                                         int64_t *num_qo_heads,
                                         int64_t *num_kv_heads,
                                         int64_t *head_dim, int64_t *page_size,
                                         int64_t *prefix_chunks);

/* The prefix chunks of the last planned step (0 before a plan): short
 * prefixes take fewer than the capacity's. */
FLASHIR_C_EXPORT int flashirCascadePlannedChunks(const FlashIRCascade *cascade,
                                                 int64_t *prefix_chunks);

/* The chunks each suffix of the last planned step runs in (1 before a
 * plan): one per min_suffix_chunk_keys (64) keys of the step's longest
 * suffix, up to suffix_chunks (4), the same for every request (shorter
 * suffixes' extra chunks are empty). */
FLASHIR_C_EXPORT int
flashirCascadePlannedSuffixChunks(const FlashIRCascade *cascade,
                                  int64_t *suffix_chunks);

/* Validates and plans a step (host int32 arrays): the prefix's page ids
 * prefix_indices[num_prefix_pages] holding prefix_len tokens, and the
 * requests' own suffixes as a page table (kv_indptr[batch + 1], kv_indices,
 * last_page_len[batch]) over a pool of `num_pages` pages. */
FLASHIR_C_EXPORT int
flashirCascadePlan(FlashIRCascade *cascade, const int32_t *prefix_indices,
                   int64_t num_prefix_pages, int64_t prefix_len,
                   const int32_t *kv_indptr, const int32_t *kv_indices,
                   const int32_t *last_page_len, int64_t batch,
                   int64_t num_pages, void *stream);

/* Runs the planned step: q [batch, Hq, D], the pools, the prefix and
 * suffix page ids (int32, device), out [batch, Hq, D], lse [batch, Hq]
 * (f32); more rows are fine, the kernels touch rows < batch only. */
FLASHIR_C_EXPORT int flashirCascadeRun(FlashIRCascade *cascade, void *q,
                                       void *k_pool, void *v_pool,
                                       int64_t num_pages, void *prefix_indices,
                                       int64_t num_prefix_indices,
                                       void *kv_indices, int64_t num_indices,
                                       void *out, void *lse, void *stream,
                                       int capacity_grids);

/* flashirCascadeRun with the variant's parameters (scalars and per-head
 * tensors only: the same values serve the prefix and suffix kernels). */
FLASHIR_C_EXPORT int flashirCascadeRunWithParams(
    FlashIRCascade *cascade, void *q, void *k_pool, void *v_pool,
    int64_t num_pages, void *prefix_indices, int64_t num_prefix_indices,
    void *kv_indices, int64_t num_indices, void *out, void *lse,
    const FlashIRParam *params, int64_t num_params, void *stream,
    int capacity_grids);

FLASHIR_C_EXPORT void flashirCascadeDestroy(FlashIRCascade *cascade);

/* Attention-state merges (eq. 6) with a bundle's split-KV merge kernel. */
typedef struct FlashIRMerge FlashIRMerge;

/* Loads `merge_kernel` (a kernel of kind merge) of `bundle_dir` for `chip`. */
FLASHIR_C_EXPORT int flashirMergeCreate(const char *bundle_dir,
                                        const char *chip,
                                        const char *merge_kernel,
                                        FlashIRMerge **out);

/* The merge kernel's query heads and head dim. */
FLASHIR_C_EXPORT int flashirMergeShape(const FlashIRMerge *merge,
                                       int64_t *num_heads, int64_t *head_dim);

/* Merges `states_per_row` (>= 2) states of each of `rows` rows (device
 * pointers): row_indptr and state_indptr int32 [rows + 1] (0, 1, ..., rows
 * and 0, n, ..., rows * n), states [rows * n, H, D] in the kernel's element
 * type with row r's states at r * n ..., state_lse [rows * n, H] f32, out
 * [rows, H, D], lse [rows, H] f32. */
FLASHIR_C_EXPORT int flashirMergeRun(FlashIRMerge *merge,
                                     const void *row_indptr,
                                     const void *state_indptr, void *states,
                                     void *state_lse, void *out, void *lse,
                                     int64_t rows, int64_t states_per_row,
                                     void *stream);

FLASHIR_C_EXPORT void flashirMergeDestroy(FlashIRMerge *merge);

#ifdef __cplusplus
}
#endif

#endif /* FLASHIR_C_RUNTIME_H */

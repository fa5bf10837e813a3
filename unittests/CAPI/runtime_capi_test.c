/*===- runtime_capi_test.c - the runtime C API's error paths --------------===*\
|*                                                                            *|
|* Runs without a GPU: null handles and arguments are refused with a status   *|
|* and a message, and creating a runner without a driver or bundle reports    *|
|* why instead of crashing.                                                   *|
\*===----------------------------------------------------------------------===*/

#include "flashir-c/Runtime.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "FAIL: %s (last error: '%s')\n", what, flashirLastError());
    ++failures;
  }
}

static int says(const char *text) {
  return strstr(flashirLastError(), text) != NULL;
}

int main(void) {
  int32_t zero = 0;
  FlashIRSplitKV *decode = NULL;
  FlashIRCascade *cascade = NULL;
  expect(flashirSplitKVCreate(NULL, "sm_90a", "d", "m", 1, 0, 1, 0, &decode) ==
                 FLASHIR_INVALID_ARGUMENT &&
             says("null argument"),
         "flashirSplitKVCreate refuses a null bundle");
  expect(flashirSplitKVPlan(NULL, &zero, &zero, &zero, &zero, 0, 1, NULL,
                            NULL) == FLASHIR_INVALID_ARGUMENT &&
             says("null handle"),
         "flashirSplitKVPlan refuses a null handle");
  expect(flashirSplitKVRun(NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, NULL, NULL,
                           0) == FLASHIR_INVALID_ARGUMENT,
         "flashirSplitKVRun refuses a null handle");
  expect(flashirSplitKVRunWithParams(NULL, NULL, NULL, NULL, 0, NULL, 0, NULL,
                                     NULL, NULL, 2, NULL,
                                     0) == FLASHIR_INVALID_ARGUMENT &&
             says("2 parameters at null"),
         "flashirSplitKVRunWithParams refuses parameters at null");
  expect(flashirSplitKVRunWithParams(NULL, NULL, NULL, NULL, 0, NULL, 0, NULL,
                                     NULL, NULL, 0, NULL,
                                     0) == FLASHIR_INVALID_ARGUMENT &&
             says("null handle"),
         "flashirSplitKVRunWithParams refuses a null handle");
  expect(flashirCascadeCreate("b", "p", "b", "d", NULL, "sm_90a", 1, 0,
                              &cascade) == FLASHIR_INVALID_ARGUMENT &&
             says("flashirCascadeCreate: null argument"),
         "flashirCascadeCreate refuses a null merge kernel");
  /* The chunking is checked before any driver or bundle is opened. */
  static const struct {
    int64_t minChunkKeys, suffixChunks, minSuffixChunkKeys;
    const char *message, *what;
  } badChunks[] = {
      {256, 0, 64,
       "flashirCascadeCreateWithChunks: suffix_chunks must be >= 1, got 0",
       "flashirCascadeCreateWithChunks refuses 0 suffix chunks"},
      {256, 4, -3,
       "flashirCascadeCreateWithChunks: min_suffix_chunk_keys must be >= 1, "
       "got -3",
       "flashirCascadeCreateWithChunks refuses negative keys per chunk"},
      {0, 4, 64,
       "flashirCascadeCreateWithChunks: min_chunk_keys must be >= 1, got 0",
       "flashirCascadeCreateWithChunks refuses 0 prefix keys per chunk"},
  };
  for (size_t i = 0; i < sizeof(badChunks) / sizeof(badChunks[0]); ++i)
    expect(flashirCascadeCreateWithChunks(
               "b", "p", "b", "d", "m", "sm_90a", 1, 0,
               badChunks[i].minChunkKeys, badChunks[i].suffixChunks,
               badChunks[i].minSuffixChunkKeys,
               &cascade) == FLASHIR_INVALID_ARGUMENT &&
               says(badChunks[i].message) && cascade == NULL,
           badChunks[i].what);
  expect(flashirCascadePlan(NULL, &zero, 1, 16, &zero, &zero, &zero, 0, 1,
                            NULL) == FLASHIR_INVALID_ARGUMENT &&
             says("null handle"),
         "flashirCascadePlan refuses a null handle");
  expect(flashirCascadeRun(NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, NULL,
                           NULL, NULL, 0) == FLASHIR_INVALID_ARGUMENT,
         "flashirCascadeRun refuses a null handle");
  expect(flashirCascadeShape(NULL, NULL, NULL, NULL, NULL, NULL) ==
             FLASHIR_INVALID_ARGUMENT,
         "flashirCascadeShape refuses a null handle");
  expect(flashirCascadePlannedChunks(NULL, NULL) == FLASHIR_INVALID_ARGUMENT,
         "flashirCascadePlannedChunks refuses a null handle");
  expect(flashirCascadePlannedSuffixChunks(NULL, NULL) ==
                 FLASHIR_INVALID_ARGUMENT &&
             says("null handle"),
         "flashirCascadePlannedSuffixChunks refuses a null handle");
  /* A real call: no GPU (CI) -> the driver is missing; a GPU -> the bundle
   * directory is. Either way a status and a message, no handle. */
  int rc =
      flashirCascadeCreate("/nonexistent-bundle", "p", "/nonexistent-bundle",
                           "d", "m", "sm_90a", 4, 0, &cascade);
  expect(rc != FLASHIR_OK && cascade == NULL && strlen(flashirLastError()) > 0,
         "flashirCascadeCreate without a driver or bundle reports an error");
  FlashIRMerge *merge = NULL;
  expect(flashirMergeCreate("b", "sm_90a", NULL, &merge) ==
                 FLASHIR_INVALID_ARGUMENT &&
             says("null argument"),
         "flashirMergeCreate refuses a null kernel name");
  expect(flashirMergeRun(NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, 2,
                         NULL) == FLASHIR_INVALID_ARGUMENT &&
             says("null handle"),
         "flashirMergeRun refuses a null handle");
  expect(flashirMergeShape(NULL, NULL, NULL) == FLASHIR_INVALID_ARGUMENT,
         "flashirMergeShape refuses a null handle");
  rc = flashirMergeCreate("/nonexistent-bundle", "sm_90a", "m", &merge);
  expect(rc != FLASHIR_OK && merge == NULL && strlen(flashirLastError()) > 0,
         "flashirMergeCreate without a driver or bundle reports an error");
  flashirMergeDestroy(NULL);
  flashirCascadeDestroy(NULL);
  flashirSplitKVDestroy(NULL);
  if (failures)
    return 1;
  printf("runtime C API: all error paths report\n");
  return 0;
}

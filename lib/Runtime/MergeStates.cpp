//===- MergeStates.cpp - attention-state merges with a merge kernel -------===//

#include "flashir/Runtime/MergeStates.h"

using namespace flashir::runtime;

Status flashir::runtime::mergeStates(KernelBundle &bundle,
                                     const std::string &mergeKernel,
                                     const MergeBuffers &buffers,
                                     void *stream) {
  const KernelInfo *kernel = bundle.find(mergeKernel);
  if (!kernel || kernel->kind != KernelKind::Merge)
    return Status::error(StatusCode::InvalidArgument,
                         "the bundle has no merge kernel " + mergeKernel);
  if (buffers.rows < 1 || buffers.statesPerRow < 2)
    return Status::error(StatusCode::InvalidArgument,
                         "a merge needs rows >= 1 and states per row >= 2, "
                         "got " +
                             std::to_string(buffers.rows) + " and " +
                             std::to_string(buffers.statesPerRow));
  if (!buffers.rowIndptr || !buffers.stateIndptr || !buffers.states ||
      !buffers.stateLse || !buffers.out || !buffers.lse)
    return Status::error(StatusCode::InvalidArgument,
                         "a merge needs every device buffer (one is null)");
  int64_t heads = kernel->numQoHeads(), dim = kernel->headDim();
  int64_t rows = buffers.rows, states = rows * buffers.statesPerRow;
  auto memref = KernelBundle::Arg::memref;
  auto indptr = [&](const void *p) {
    return memref(const_cast<void *>(p), {rows + 1});
  };
  KernelBundle::RoleArgs fixed = {
      {ArgRole::QoIndptr, indptr(buffers.rowIndptr)},
      {ArgRole::ChunkIndptr, indptr(buffers.stateIndptr)},
      {ArgRole::PartialO, memref(buffers.states, {states, heads, dim})},
      {ArgRole::PartialLse, memref(buffers.stateLse, {states, heads})},
      {ArgRole::Out, memref(buffers.out, {rows, heads, dim})},
      {ArgRole::Lse, memref(buffers.lse, {rows, heads})}};
  std::vector<KernelBundle::Arg> args;
  if (Status s = bundle.arrange(mergeKernel, fixed, {}, args); !s)
    return s;
  // A plain launch: the stream's previous kernel is not a split kernel
  // this merge waits for.
  return bundle.launchArgs(mergeKernel, args, unsigned(rows), unsigned(heads),
                           stream, 1, /*programmatic=*/false);
}

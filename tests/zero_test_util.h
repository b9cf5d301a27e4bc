// zero_test_util.h: helpers shared by the ZeRO tests (parts 8 and 9, public and hidden).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <vector>

#include "comm_runtime.h"
#include "heap_watch.h"
#include "kit_test.h"
#include "zero_dp_stage3.h"

namespace kit {

// Shard `idx` of `full` flattened row-major and zero-padded to a multiple of `parts`.
Vector expected_shard(const Matrix& full, int idx, int parts);

// A layer over `comm` holding this rank's shards of (full_w, full_b), built
// without the student's partition_flat_tensor.
dtrain::ZeroDPStage3FCLayer layer_from_full(Communicator& comm, const Matrix& full_w, const Matrix& full_b);

// Trains the ZeRO-3 model over kit::world() for one epoch of the first
// `train_rows` training samples (split evenly over the ranks) with this
// global batch, from initial_weights(15442) cut into shards by the test,
// and returns the accuracy on the first `test_rows` test samples. Only the
// student's parts 8 (forward/backward) and 9 (Adam) take part. Collective.
double zero_training_accuracy(long train_rows, long test_rows, int global_batch);

// The heap blocks a call may leave allocated, each with the size its role
// needs: its result's, the saved input's, the shards' (zero_rules.h,
// allowed_blocks); entries at null are ignored.
using AllowedBlocks = std::array<dtrain::HeapWatch::Allowed, 6>;

// Checks the ZeRO memory rule around `call` (the student-call wrappers check
// every forward and backward themselves: framework/guards/zero_rules.h): of the heap blocks the call
// allocates itself (MPI's and the kit's bookkeeping inside a collective are
// not the call's), none may still be allocated when it has returned, except
// the blocks `allowed()` names then. Fails with the bytes kept against the
// full weight's size. Exact: what other code holds, or how many pages the
// process has resident, never counts (heap_watch.h).
template <typename Call, typename Allowed>
::testing::AssertionResult keeps_no_full_weight(const char* what, std::int64_t full_weight_bytes, Call&& call,
                                                Allowed&& allowed);

}  // namespace kit

// ---- implementation of the template ----
#include "heap_watch.h"
#include "zero_rules.h"

namespace kit {

template <typename Call, typename Allowed>
::testing::AssertionResult keeps_no_full_weight(const char* what, std::int64_t full_weight_bytes, Call&& call,
                                                Allowed&& allowed) {
  if (!dtrain::HeapWatch::available())
    return ::testing::AssertionFailure() << "the memory rule can't be checked: this test binary does not link the "
                                            "kit's malloc tracker (framework/guards/memory_tracker.cpp)";
  dtrain::HeapWatch watch;
  call();
  const AllowedBlocks may_stay = allowed();
  const std::string problem = dtrain::memory_rule_problem(what, watch.kept(may_stay.data(), may_stay.size()),
                                                          full_weight_bytes);
  if (problem.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << problem;
}

}  // namespace kit

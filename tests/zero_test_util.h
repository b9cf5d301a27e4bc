// zero_test_util.h: helpers shared by the ZeRO tests (parts 8 and 9, public and hidden).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <vector>

#include "comm_runtime.h"
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

// Checks one forward or backward call's collectives (logged by a
// dtrain::ledger::CallLog around it) against what ZeRO-3 needs, in any order:
//   forward:  all-gather of the weight's shards, all-gather of the bias's
//   backward: all-gather of the weight's shards (for grad_x), reduce-scatter
//             of the weight gradient, reduce-scatter of the bias gradient
// and the bytes the layer's communicator counted against comm.h's formula.
// A call more or fewer fails, named: "backward: all-gather of 12 elements
// that ZeRO-3's backward doesn't need (...)".
::testing::AssertionResult moves_stage3_traffic(const char* pass, const dtrain::ZeroDPStage3FCLayer& layer,
                                                const std::vector<dtrain::ledger::LoggedCall>& calls,
                                                std::uint64_t bytes_moved);

// The heap blocks a call may leave allocated: its result's, the saved input's,
// the shards' (their data()); null entries are ignored.
using AllowedBlocks = std::array<const void*, 8>;

// Checks the ZeRO memory rule around `call`: of the heap blocks the call
// allocates itself (MPI's and the kit's bookkeeping inside a collective are
// not the call's), none may still be allocated when it has returned, except
// the blocks `allowed()` names then. Fails with the bytes kept against the
// full weight's size. Exact: what other code holds, or how many pages the
// process has resident, never counts (heap_watch.h).
template <typename Call, typename Allowed>
::testing::AssertionResult keeps_no_full_weight(const char* what, std::int64_t full_weight_bytes, Call&& call,
                                                Allowed&& allowed);

}  // namespace kit

// Fails the case with keeps_no_full_weight's message alone.
#define EXPECT_KEEPS_NO_FULL_WEIGHT(what, full_weight_bytes, call, allowed)                                      \
  do {                                                                                                        \
    const ::testing::AssertionResult kit_memory_rule = ::kit::keeps_no_full_weight(what, full_weight_bytes,   \
                                                                                    call, allowed);            \
    if (!kit_memory_rule) ADD_FAILURE() << kit_memory_rule.message();                                         \
  } while (0)

// ---- implementation of the template ----
#include "heap_watch.h"

namespace kit {

// Blocks below this are bookkeeping, not a weight (the layers' are megabytes).
constexpr std::int64_t kHeapSlack = 64 * 1024;

template <typename Call, typename Allowed>
::testing::AssertionResult keeps_no_full_weight(const char* what, std::int64_t full_weight_bytes, Call&& call,
                                                Allowed&& allowed) {
  if (!dtrain::HeapWatch::available())
    return ::testing::AssertionFailure() << "the memory rule can't be checked: this test binary does not link the "
                                            "kit's malloc tracker (framework/memory_tracker.cpp)";
  dtrain::HeapWatch watch;
  call();
  const AllowedBlocks may_stay = allowed();
  const dtrain::HeapWatch::Kept kept = watch.kept(may_stay.data(), may_stay.size());
  if (kept.bytes <= kHeapSlack && kept.complete) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << " kept " << kept.bytes << " bytes in " << kept.blocks << " block" << (kept.blocks == 1 ? "" : "s")
         << " that it allocated and did not free, against a full weight of " << full_weight_bytes
         << " bytes. Under ZeRO-3 the full W "
         << "and b may exist only inside forward/backward: not in a member, a static, a global or a leaked allocation "
         << "(handout: ZeRO background, the memory rule)."
         << (kept.complete ? "" : " (More blocks were allocated at once than the check can follow.)");
}

}  // namespace kit

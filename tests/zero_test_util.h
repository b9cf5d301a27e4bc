// zero_test_util.h: helpers shared by the ZeRO tests (parts 8 and 9, public and hidden).
#pragma once

#include <cstdint>
#include <string>

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

// What a call left allocated, beyond what it was allowed to keep.
struct KeptMemory {
  std::int64_t heap = 0, resident = 0;
};

// Checks the ZeRO memory rule around `call`: afterwards the process may hold
// `allowed_bytes` more than before (the call's result, the saved input), plus
// a fixed slack for the MPI library's own buffers. Fails with the bytes kept
// against the full weight's size.
template <typename Call>
::testing::AssertionResult keeps_no_full_weight(const char* what, std::int64_t full_weight_bytes,
                                                std::int64_t allowed_bytes, Call&& call);

}  // namespace kit

// Fails the case with keeps_no_full_weight's message alone.
#define EXPECT_KEEPS_NO_FULL_WEIGHT(what, full_weight_bytes, allowed_bytes, call)                               \
  do {                                                                                                        \
    const ::testing::AssertionResult kit_memory_rule = ::kit::keeps_no_full_weight(what, full_weight_bytes,   \
                                                                                    allowed_bytes, call);      \
    if (!kit_memory_rule) ADD_FAILURE() << kit_memory_rule.message();                                         \
  } while (0)

// ---- implementation of the template ----
#include "heap_probe.h"

namespace kit {

constexpr std::int64_t kHeapSlack = 256 * 1024;       // MPI and gtest bookkeeping
constexpr std::int64_t kResidentSlack = 1024 * 1024;  // plus page rounding and first-touch of code

template <typename Call>
::testing::AssertionResult keeps_no_full_weight(const char* what, std::int64_t full_weight_bytes,
                                                std::int64_t allowed_bytes, Call&& call) {
  const BigBlocksToSystem measuring;
  const std::int64_t heap_before = mallinfo_heap_bytes(), resident_before = resident_bytes();
  call();
  const std::int64_t heap_kept = mallinfo_heap_bytes() - heap_before - allowed_bytes;
  const std::int64_t resident_kept = resident_before ? resident_bytes() - resident_before - allowed_bytes : 0;
  if (heap_kept <= kHeapSlack && resident_kept <= kResidentSlack) return ::testing::AssertionSuccess();
  const std::int64_t kept = std::max(heap_kept, resident_kept);
  return ::testing::AssertionFailure()
         << what << " kept " << kept << " bytes after it returned (heap " << heap_kept << ", resident " << resident_kept
         << "), against a full weight of " << full_weight_bytes << " bytes. Under ZeRO-3 the full W and b may exist "
         << "only inside forward/backward: not in a member, a static, a global or a leaked allocation "
         << "(handout: ZeRO background, the memory rule).";
}

}  // namespace kit

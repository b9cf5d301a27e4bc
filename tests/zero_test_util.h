// zero_test_util.h: helpers shared by the ZeRO tests (parts 8 and 9, public and hidden).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <vector>

#include <memory>
#include <utility>

#include "comm_runtime.h"
#include "heap_watch.h"
#include "kit_test.h"
#include "student_calls.h"
#include "zero_calls.h"
#include "zero_dp_stage3.h"

namespace kit {

// The ZeRO cases hold a layer and an optimizer of the student's by a
// handle, the same in both modes: a field is read or set by a call
// (layer.grad_w_shard(), layer.set_x(...)), and dtrain::student::forward,
// backward and step take the handle. Driven (docs/driven-calls.md), the
// objects live in the student's process and the handle holds their numbers
// (zero_calls.h); in one process, the handle holds the objects.
#ifdef KIT_DRIVEN
using ZeroLayer = dtrain::calls::zero::RemoteLayer;
using ZeroAdam = dtrain::calls::zero::RemoteAdam;
#else
class ZeroLayer {
 public:
  explicit ZeroLayer(std::unique_ptr<dtrain::ZeroDPStage3FCLayer> layer) : layer_(std::move(layer)) {}
  dtrain::ZeroDPStage3FCLayer& held() const { return *layer_; }
  void zero_grad() { layer_->zero_grad(); }
#define KIT_ZERO_FIELD_LOCAL(TYPE, NAME)          \
  TYPE NAME() const { return layer_->NAME; }      \
  void set_##NAME(const TYPE& value) { layer_->NAME = value; }
  KIT_ZERO_LAYER_FIELDS(KIT_ZERO_FIELD_LOCAL)
#undef KIT_ZERO_FIELD_LOCAL

 private:
  std::unique_ptr<dtrain::ZeroDPStage3FCLayer> layer_;  // its address stays: the optimizer keeps it
};

class ZeroAdam {
 public:
  ZeroAdam(const std::vector<ZeroLayer*>& layers, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
           double eps = 1e-8);
  dtrain::ZeroDPAdam& held() const { return *adam_; }
  int step_idx() const { return adam_->step_idx; }
  std::vector<std::string> state_keys() const;
  Vector moment(const std::string& key, const std::string& which) const;
  void set_lr(double value) { adam_->lr = lr = value; }
  double lr, beta1, beta2, eps;

 private:
  std::unique_ptr<dtrain::ZeroDPAdam> adam_;
};
#endif

// Whether the optimizer's state has `key` ("0.w").
bool has_state(const ZeroAdam& optimizer, const std::string& key);

// A layer built by the student's constructor, which partitions (full_w,
// full_b) with the student's partition_flat_tensor.
ZeroLayer partitioned_layer(Communicator& comm, int in_dim, int out_dim, int dp_size, const Matrix& full_w,
                            const Matrix& full_b);

// Shard `idx` of `full` flattened row-major and zero-padded to a multiple of `parts`.
Vector expected_shard(const Matrix& full, int idx, int parts);

// A layer over `comm` holding this rank's shards of (full_w, full_b), built
// without the student's partition_flat_tensor; or holding the shards given.
ZeroLayer layer_from_full(Communicator& comm, const Matrix& full_w, const Matrix& full_b);
ZeroLayer layer_from_shards(Communicator& comm, int in_dim, int out_dim, const Vector& w_shard, const Vector& b_shard);

// Trains the ZeRO-3 model over kit::world() for one epoch of the first
// `train_rows` training samples (split evenly over the ranks) with this
// global batch, from initial_weights(15442) cut into shards by the test,
// and returns the accuracy on the first `test_rows` test samples. Only the
// student's parts 8 (forward/backward) and 9 (Adam) take part; the loop,
// the data and the accuracy are the harness's. Collective.
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

#ifndef KIT_DRIVEN
// The student-call wrappers (student_calls.h) on the in-process handles.
namespace dtrain::student {
inline Matrix forward(kit::ZeroLayer& layer, const Matrix& x) { return forward(layer.held(), x); }
inline Matrix backward(kit::ZeroLayer& layer, const Matrix& output_grad) { return backward(layer.held(), output_grad); }
inline void step(kit::ZeroAdam& optimizer) { step(optimizer.held()); }
}  // namespace dtrain::student
#endif

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

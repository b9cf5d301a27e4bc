// pipeline_checks.h: the checks of Part 12's cases, public and hidden. Each
// case runs one step of a K-layer MLP (784, 256 for each hidden layer, 10)
// on a batch of 20 rows (micro-batches of unequal size where M does not
// divide 20) and checks, on every stage: its weight gradients against the
// same model run whole on one rank, its exact order of forward and backward
// calls, the micro-batches it held at once, and the messages on each link.
#pragma once

#include <string>
#include <vector>

#include "comm_runtime.h"
#include "pipeline_calls.h"
#include "kit_test.h"
#include "pipeline_runtime.h"

using dtrain::PipelineAccess;
using dtrain::PipelineStage;
using dtrain::Schedule;

namespace kit {

constexpr int kBatch = 20;

// The batch: pixels and labels from the row and column numbers.
inline Matrix batch_x() {
  Matrix x(kBatch, 784);
  for (int i = 0; i < kBatch; ++i)
    for (int j = 0; j < 784; ++j) x(i, j) = ((i * 31 + j * 7) % 97) / 97.0;
  return x;
}
inline Labels batch_y() {
  Labels y(kBatch);
  for (int i = 0; i < kBatch; ++i) y(i) = (i * 3) % 10;
  return y;
}

inline void check_step(Schedule schedule, int m) {
  Communicator& comm = world();
  const int stages = comm.size(), k = comm.rank();
  const dtrain::PipelineWeights weights = dtrain::pipeline_weights(dtrain::pipeline_dims(stages), 15442);
  const Matrix x = batch_x();
  const Labels y = batch_y();
  PipelineStage stage = PipelineAccess::make(k, weights, x, y, m);
  dtrain::ledger::CallLog log;
  dtrain::student::pipeline_step(stage, comm, schedule);
  long to_next = 0, to_previous = 0, elsewhere = 0;
  for (const auto& call : log.take()) {
    if (call.dest < 0) continue;
    (call.dest == k + 1 ? to_next : call.dest == k - 1 ? to_previous : elsewhere) += 1;
  }
  const dtrain::SequentialGradients whole = dtrain::sequential_gradients(weights, x, y);
  EXPECT_MATRIX_NEAR(PipelineAccess::grad_w(stage), whole.w[static_cast<size_t>(k)]);
  EXPECT_MATRIX_NEAR(PipelineAccess::grad_b(stage), whole.b[static_cast<size_t>(k)]);
  EXPECT_EQ(PipelineAccess::calls(stage), dtrain::schedule_calls(schedule, stages, k, m)) << "stage " << k << "'s calls";
  EXPECT_EQ(PipelineAccess::peak_stashes(stage), dtrain::stash_formula(schedule, stages, k, m)) << "micro-batches stage " << k << " held at once";
  EXPECT_EQ(PipelineAccess::stashes(stage), 0) << "every forward has its backward";
  EXPECT_EQ(to_next, k + 1 < stages ? m : 0) << "activations sent to stage " << k + 1;
  EXPECT_EQ(to_previous, k > 0 ? m : 0) << "gradients sent to stage " << k - 1;
  EXPECT_EQ(elsewhere, 0) << "messages to a stage that is no neighbour";
}

}  // namespace kit

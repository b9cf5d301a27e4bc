// pipeline_checks.h: the checks of Part 12's cases, public and hidden. Each
// case runs one step of a K-layer MLP (784, 256 for each hidden layer, 10)
// on a batch of 20 rows (micro-batches of unequal size where M does not
// divide 20) and checks, on every stage: its weight gradients against the
// same model run whole on one rank, its exact order of forward and backward
// calls, the micro-batches it held at once, and the messages on each link.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "comm_runtime.h"
#include "pipeline_calls.h"
#include "kit_test.h"
#include "kit_facts.h"  // the model's sizes, generated from kit/facts.py
#include "pipeline_runtime.h"

using dtrain::PipelineAccess;
using dtrain::PipelineStage;
using dtrain::Schedule;

namespace kit {

constexpr int kBatch = 20;
constexpr std::uint64_t kSeed = 15442;  // the model's weights

// The batch: pixels and labels from the row and column numbers.
inline Matrix batch_x() {
  Matrix x(kBatch, dtrain::facts::kFeatures);
  for (int i = 0; i < kBatch; ++i)
    for (int j = 0; j < dtrain::facts::kFeatures; ++j) x(i, j) = ((i * 31 + j * 7) % 97) / 97.0;
  return x;
}
inline Labels batch_y() {
  Labels y(kBatch);
  for (int i = 0; i < kBatch; ++i) y(i) = (i * 3) % 10;
  return y;
}

// The calls one stage ran against its schedule's: the first that differs
// (its position, what ran there, what the schedule runs there), and both
// sequences shown short around it; "" if they are the same.
inline std::string order_difference(const std::vector<std::string>& ran, const std::vector<std::string>& want,
                                    Schedule schedule, int k) {
  if (ran == want) return "";
  size_t at = 0;
  while (at < ran.size() && at < want.size() && ran[at] == want[at]) ++at;
  const char* name = schedule == Schedule::GPipe ? "GPipe" : "1F1B";
  std::string why = "stage " + std::to_string(k) + "'s calls differ from the " + name + " schedule's at position " +
                    std::to_string(at) + ": ";
  if (at < ran.size() && at < want.size())
    why += "it ran " + ran[at] + ", the schedule runs " + want[at] + " there";
  else if (at < want.size())
    why += "it stopped after " + std::to_string(ran.size()) + " calls, the schedule runs " + want[at] + " next";
  else
    why += "it ran " + ran[at] + " after the schedule's last call";
  // A window around the difference, the call itself in brackets.
  auto shown = [&](const std::vector<std::string>& calls) {
    constexpr size_t kBefore = 3, kAfter = 3;
    const size_t from = at > kBefore ? at - kBefore : 0, to = std::min(calls.size(), at + kAfter + 1);
    std::string text = from > 0 ? "... " : "";
    for (size_t i = from; i < to; ++i) text += (i == at ? "[" + calls[i] + "]" : calls[i]) + " ";
    if (at >= calls.size()) text += "[end] ";
    return text + (to < calls.size() ? "..." : "(end)");
  };
  return why + "\n  ran:      " + shown(ran) + "\n  schedule: " + shown(want);
}

inline void check_step(Schedule schedule, int m) {
  Communicator& comm = world();
  const int stages = comm.size(), k = comm.rank();
  const std::vector<int> dims = dtrain::pipeline_dims(stages);
  const Matrix x = batch_x();
  const Labels y = batch_y();
  // The whole model's gradients of this stage's layer, then the stage, each
  // from weights drawn again: the driven harness holds them in its share of
  // the rank's memory, never two copies of the model at once.
  Matrix want_w, want_b;
  {
    dtrain::SequentialGradients whole = dtrain::sequential_gradients(dtrain::pipeline_weights(dims, kSeed), x, y);
    want_w = std::move(whole.w[static_cast<size_t>(k)]);
    want_b = std::move(whole.b[static_cast<size_t>(k)]);
  }
  PipelineStage stage = PipelineAccess::make(k, dtrain::pipeline_weights(dims, kSeed), x, y, m);
  dtrain::ledger::CallLog log;
  dtrain::student::pipeline_step(stage, comm, schedule);
  long to_next = 0, to_previous = 0, elsewhere = 0;
  for (const auto& call : log.take()) {
    if (call.dest < 0) continue;
    (call.dest == k + 1 ? to_next : call.dest == k - 1 ? to_previous : elsewhere) += 1;
  }
  EXPECT_MATRIX_NEAR(PipelineAccess::grad_w(stage), want_w);
  EXPECT_MATRIX_NEAR(PipelineAccess::grad_b(stage), want_b);
  const std::string order = order_difference(PipelineAccess::calls(stage), dtrain::schedule_calls(schedule, stages, k, m),
                                             schedule, k);
  if (!order.empty()) ADD_FAILURE() << order;
  EXPECT_EQ(PipelineAccess::peak_stashes(stage), dtrain::stash_formula(schedule, stages, k, m)) << "micro-batches stage " << k << " held at once";
  EXPECT_EQ(PipelineAccess::stashes(stage), 0) << "every forward has its backward";
  EXPECT_EQ(to_next, k + 1 < stages ? m : 0) << "activations sent to stage " << k + 1;
  EXPECT_EQ(to_previous, k > 0 ? m : 0) << "gradients sent to stage " << k - 1;
  EXPECT_EQ(elsewhere, 0) << "messages to a stage that is no neighbour";
}

}  // namespace kit

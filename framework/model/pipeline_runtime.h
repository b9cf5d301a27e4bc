// pipeline_runtime.h: how the framework and the tests build a pipeline stage
// (pipeline_parallel.h) and read what it did. Student code never includes it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pipeline_parallel.h"

namespace dtrain {

// A K-layer MLP's weights: w[k] (dims[k], dims[k+1]), b[k] (1, dims[k+1]).
struct PipelineWeights {
  std::vector<int> dims;  // K+1 sizes: 784, 256, ..., 10
  std::vector<Matrix> w, b;
};
// The sizes of the K-layer MLP: 784, then K-1 hidden layers of 256, then 10.
std::vector<int> pipeline_dims(int stages);
// Drawn from `seed` as initial_weights draws the assignment's model.
PipelineWeights pipeline_weights(const std::vector<int>& dims, std::uint64_t seed);

// What a stage is, less its layer and its batch: all a stand-in needs.
struct StageShape {
  int stage, num_stages, in_dim, out_dim, micro_batches, batch_rows;
};

struct PipelineAccess {
  // Stage `stage` of the model on one batch of x (B, dims[0]) and y (B), cut
  // into `micro_batches` micro-batches of B/M rows (the first B%M one more).
  static PipelineStage make(int stage, const PipelineWeights& weights, const Matrix& x, const Labels& y,
                            int micro_batches);
  static const Matrix& grad_w(const PipelineStage& s);  // (in_dim, out_dim), summed over the step's micro-batches
  static const Matrix& grad_b(const PipelineStage& s);  // (1, out_dim)
  static void take_gradients(PipelineStage& s, Matrix& w, Matrix& b);  // both move out
  static Matrix& w(PipelineStage& s);
  static Matrix& b(PipelineStage& s);
  // The calls in order: "F0", "F1", "B0", ...
  static const std::vector<std::string>& calls(const PipelineStage& s);
  static int peak_stashes(const PipelineStage& s);            // micro-batches held at once, at most
  static std::uint64_t peak_stash_bytes(const PipelineStage& s);
  static int stashes(const PipelineStage& s);                 // held now
  static double loss(const PipelineStage& s);                 // last stage: the batch's mean loss so far
  static long correct(const PipelineStage& s);                // last stage: rows predicted right so far
  // A stage whose forward and backward run elsewhere (the driven mode's
  // student process: they are upcalls to the harness, which holds the
  // stage); its rows(mb) and micro_batches() are the shape's.
  static PipelineStage stand_in(const StageShape& shape, std::function<Matrix(int, const Matrix&)> forward,
                                std::function<Matrix(int, const Matrix&)> backward);
  static StageShape shape(const PipelineStage& s);
  // A new step on a new batch: gradients, record and loss start again.
  static void next_batch(PipelineStage& s, const Matrix& x, const Labels& y);
};

// The same model run whole on one rank: forward and backward of the batch,
// the gradients of every layer. The tests' reference.
struct SequentialGradients {
  std::vector<Matrix> w, b;
  double loss = 0;
};
SequentialGradients sequential_gradients(PipelineWeights weights, const Matrix& x, const Labels& y);

}  // namespace dtrain

namespace dtrain {

// ---- the schedules themselves (pipeline_schedule.cpp) ----

// The calls stage `stage` of `stages` makes in one step, in order: "F0", ...,
// "B0", ... (pipeline_parallel.h states the rule; the tests hold the
// student's record against it).
std::vector<std::string> schedule_calls(Schedule schedule, int stages, int stage, int micro_batches);

// The micro-batches stage `stage` holds at once, at most: M under GPipe;
// under 1F1B its warm-up forwards plus the one in the steady state.
int stash_formula(Schedule schedule, int stages, int stage, int micro_batches);

// The share of a step each stage idles when every stage takes the same time
// per micro-batch and messages take none: (K-1)/(M+K-1), under either schedule.
double bubble_formula(int stages, int micro_batches);

// A step of the schedule played out with the given times per micro-batch
// (seconds; forward[k], backward[k] of stage k) and messages that take no
// time: how long the step takes, and the share of it each stage idles.
// With equal times it gives bubble_formula on every stage; with unequal
// ones, the bubble the formula's assumption hides.
struct ScheduleTimes {
  double step = 0;
  std::vector<double> idle_share;  // per stage
};
ScheduleTimes play_schedule(Schedule schedule, int micro_batches, const std::vector<double>& forward,
                            const std::vector<double>& backward);

}  // namespace dtrain

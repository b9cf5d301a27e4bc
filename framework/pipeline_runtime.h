// pipeline_runtime.h: how the framework and the tests build a pipeline stage
// (pipeline_parallel.h) and read what it did. Student code never includes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline_parallel.h"

namespace dtrain {

// A K-layer MLP's weights: w[k] (dims[k], dims[k+1]), b[k] (1, dims[k+1]).
struct PipelineWeights {
  std::vector<int> dims;  // K+1 sizes: 784, 256, ..., 10
  std::vector<Matrix> w, b;
};
// Drawn from `seed` as initial_weights draws the assignment's model.
PipelineWeights pipeline_weights(const std::vector<int>& dims, std::uint64_t seed);

struct PipelineAccess {
  // Stage `stage` of the model on one batch of x (B, dims[0]) and y (B), cut
  // into `micro_batches` micro-batches of B/M rows (the first B%M one more).
  static PipelineStage make(int stage, const PipelineWeights& weights, const Matrix& x, const Labels& y,
                            int micro_batches);
  static const Matrix& grad_w(const PipelineStage& s);  // (in_dim, out_dim), summed over the step's micro-batches
  static const Matrix& grad_b(const PipelineStage& s);  // (1, out_dim)
  static Matrix& w(PipelineStage& s);
  static Matrix& b(PipelineStage& s);
  // The calls in order: "F0", "F1", "B0", ...
  static const std::vector<std::string>& calls(const PipelineStage& s);
  static int peak_stashes(const PipelineStage& s);            // micro-batches held at once, at most
  static std::uint64_t peak_stash_bytes(const PipelineStage& s);
  static int stashes(const PipelineStage& s);                 // held now
  static double loss(const PipelineStage& s);                 // last stage: the batch's mean loss so far
  static long correct(const PipelineStage& s);                // last stage: rows predicted right so far
  // A new step on a new batch: gradients, record and loss start again.
  static void next_batch(PipelineStage& s, const Matrix& x, const Labels& y);
};

// The same model run whole on one rank: forward and backward of the batch,
// the gradients of every layer. The tests' reference.
struct SequentialGradients {
  std::vector<Matrix> w, b;
  double loss = 0;
};
SequentialGradients sequential_gradients(const PipelineWeights& weights, const Matrix& x, const Labels& y);

}  // namespace dtrain

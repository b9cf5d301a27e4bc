// layers.h: the layers of the tensor-parallel MLP (784-256-10) and the model.
//
// FC1 and FC2 are split over the mp ranks of a data-parallel group:
//   naive     FC1 and FC2 both split by output columns; FC2 gathers its
//             input (point A) and its output (point B) with the Part 3 functions.
//   Megatron  FC1 split by output columns, FC2 by input rows; FC2 needs no
//             input gather and sums its partial outputs at point B (Part 4).
// Backward uses Parts 5/6 at the same points, and every FC layer averages its
// weight gradient over the dp ranks with collect_weight_grad (Part 7).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "func_impl.h"
#include "kit_facts.h"  // generated from kit/facts.py
#include "layer_profiler.h"
#include "tensor.h"

namespace dtrain {

// Sizes of the assignment's model (kit/facts.py).
using facts::kFeatures, facts::kHidden, facts::kClasses;

struct ParallelConfig {
  int mp_size = 1, dp_size = 1;
  bool megatron = false;
};

class FCLayer {
 public:
  // full_w (in_dim, out_dim) and full_b (1, out_dim) are the whole layer; the
  // layer keeps the block its mp index owns.
  FCLayer(Communicator& world, const ParallelConfig& config, bool is_fc1, int in_dim, int out_dim,
          const Matrix& full_w, const Matrix& full_b);

  const Matrix& forward(const Matrix& x);             // (B, this layer's input part) -> (B, output part)
  const Matrix& backward(const Matrix& output_grad);  // -> grad of the input part; empty for FC1
  void sgd_step(double lr);

  ParallelInfo info;
  bool is_fc1, megatron;
  int mp_size;
  Matrix w, b;            // (part_in_dim, part_out_dim), (1, part_out_dim)
  Matrix grad_w, grad_b;  // same shapes, averaged over dp after backward

 private:
  Matrix x_;         // the input the weights saw: (B, part_in_dim)
  Matrix out_;       // forward result
  Matrix grad_x_;    // backward result
  Matrix local_w_;   // this rank's weight gradient before averaging: (part_in_dim, part_out_dim), reused
};

class ReLULayer {
 public:
  const Matrix& forward(const Matrix& x);
  const Matrix& backward(const Matrix& output_grad);

 private:
  Matrix out_, grad_x_;
};

// Softmax over each row, then the mean cross-entropy against the labels.
class SoftmaxCrossEntropy {
 public:
  double forward(const Matrix& logits, const Labels& labels);  // (B, C), (B) -> mean loss
  const Matrix& backward();                                    // (B, C): d(mean loss)/d(logits)
  double accuracy() const;                                     // of the last forward

 private:
  Matrix probs_, grad_;
  Labels labels_;
};

// The full initial weights of the model for a seed: W1 (784, 256), b1 (1, 256),
// W2 (256, 10), b2 (1, 10).
struct FullWeights {
  Matrix w1, b1, w2, b2;
};
FullWeights initial_weights(std::uint64_t seed);

// The weights of an MLP of any sizes (dims[0] inputs, dims.back() classes),
// drawn as initial_weights draws the assignment's (which is the case dims =
// 784, 256, 10): layer k's W (dims[k], dims[k+1]) normal with standard
// deviation 1/sqrt(dims[k]), its b (1, dims[k+1]) zero. The extension parts'
// models start from it.
struct LayerWeights {
  std::vector<Matrix> w, b;
};
LayerWeights mlp_weights(const std::vector<int>& dims, std::uint64_t seed);

// The 784-256-10 MLP of the assignment, split per `config` over `world`.
// Every configuration starts from the same full weights (drawn from `seed`)
// so that configurations can be compared number for number.
class MLP {
 public:
  MLP(Communicator& world, const ParallelConfig& config, std::uint64_t seed = 15442);
  MLP(Communicator& world, const ParallelConfig& config, const FullWeights& weights);

  double forward(const Matrix& x, const Labels& y);  // (B, 784), (B) -> loss; accuracy() after
  double accuracy() const { return loss_.accuracy(); }
  void backward();
  void sgd_step(double lr);

  LayerProfiler* profiler = nullptr;  // set to record per-layer peak memory
  FCLayer fc1, fc2;

 private:
  ReLULayer relu_;
  SoftmaxCrossEntropy loss_;
};

}  // namespace dtrain

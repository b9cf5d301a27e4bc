// Part 9, ZeroDPAdam::step: Adam on local shards only.
//   make test-part9
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part9*'
// The cases set the gradient shards themselves, so they depend on no other
// student function. The end-to-end case is test_part9_zero_training.cpp.
#include <cmath>

#include "zero_test_util.h"

using namespace kit;
using dtrain::ZeroDPAdam;
using dtrain::ZeroDPStage3FCLayer;

KIT_SUITE(Part9Adam, 4);

namespace {

// Two padded layers over 4 ranks: (3, 5) weights are 15 values in shards of 4,
// 5 biases in shards of 2; (5, 2) weights are 10 values in shards of 3, 2 biases in shards of 1.
struct Shape {
  int in, out;
};
const Shape kShapes[2] = {{3, 5}, {5, 2}};

Matrix initial(int layer, int rows, int cols) {
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = 0.1 * (i + 1) * (i % 2 ? -1 : 1) + 0.01 * layer;
  return m;
}

// The full gradient of step t (1-based): smooth, signed, different per layer.
Matrix gradient(int layer, int rows, int cols, int t) {
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = std::sin(0.7 * static_cast<double>(i) + t) * (1 + 0.05 * static_cast<double>(i)) + 0.01 * layer;
  return m;
}

// Adam on one whole unsharded tensor, written independently of any shard logic.
struct ReferenceAdam {
  Vector p, m, v;
  explicit ReferenceAdam(const Matrix& full)
      : p(Eigen::Map<const Vector>(full.data(), full.size())), m(Vector::Zero(full.size())), v(Vector::Zero(full.size())) {}
  void step(const Matrix& grad, int t, double lr, double b1, double b2, double eps) {
    for (Eigen::Index i = 0; i < p.size(); ++i) {
      const double g = grad.data()[i];
      m(i) = b1 * m(i) + (1 - b1) * g;
      v(i) = b2 * v(i) + (1 - b2) * g * g;
      const double m_hat = m(i) / (1 - std::pow(b1, t)), v_hat = v(i) / (1 - std::pow(b2, t));
      p(i) -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
  Matrix as_matrix(const Vector& flat) const { return Eigen::Map<const Matrix>(flat.data(), 1, flat.size()); }
};

struct AdamSetup {
  std::vector<ZeroDPStage3FCLayer> layers;
  std::vector<ReferenceAdam> weights, biases;  // the unsharded twins
};

AdamSetup make_setup() {
  AdamSetup s;
  s.layers.reserve(2);
  for (int l = 0; l < 2; ++l) {
    const Matrix w = initial(l, kShapes[l].in, kShapes[l].out), b = initial(l, 1, kShapes[l].out);
    s.layers.push_back(layer_from_full(world(), w, b));
    s.weights.emplace_back(w);
    s.biases.emplace_back(b);
  }
  return s;
}

// Runs `steps` steps on shards and on the twins and compares every rank's
// shards and moments after each step.
void run_and_compare(AdamSetup& s, ZeroDPAdam& opt, int steps) {
  for (int t = 1; t <= steps; ++t) {
    SCOPED_TRACE("after step " + std::to_string(t));
    for (int l = 0; l < 2; ++l) {
      const Matrix gw = gradient(l, kShapes[l].in, kShapes[l].out, t), gb = gradient(l, 1, kShapes[l].out, t);
      s.layers[l].grad_w_shard = expected_shard(gw, rank(), 4);
      s.layers[l].grad_b_shard = expected_shard(gb, rank(), 4);
      s.weights[l].step(gw, t, opt.lr, opt.beta1, opt.beta2, opt.eps);
      s.biases[l].step(gb, t, opt.lr, opt.beta1, opt.beta2, opt.eps);
    }
    opt.step();
    ASSERT_EQ(opt.step_idx, t) << "step_idx counts the steps taken";
    for (int l = 0; l < 2; ++l) {
      const std::string w = std::to_string(l) + ".w", b = std::to_string(l) + ".b";
      ASSERT_EQ(opt.state.count(w), 1u) << "state must have the key \"" << w << "\"";
      ASSERT_EQ(opt.state.count(b), 1u) << "state must have the key \"" << b << "\"";
      const auto& tw = s.weights[l];
      const auto& tb = s.biases[l];
      EXPECT_VECTOR_NEAR(s.layers[l].w_shard, expected_shard(tw.as_matrix(tw.p), rank(), 4)) << "layer " << l;
      EXPECT_VECTOR_NEAR(s.layers[l].b_shard, expected_shard(tb.as_matrix(tb.p), rank(), 4)) << "layer " << l;
      EXPECT_VECTOR_NEAR(opt.state.at(w).m, expected_shard(tw.as_matrix(tw.m), rank(), 4)) << w << " m";
      EXPECT_VECTOR_NEAR(opt.state.at(w).v, expected_shard(tw.as_matrix(tw.v), rank(), 4)) << w << " v";
      EXPECT_VECTOR_NEAR(opt.state.at(b).m, expected_shard(tb.as_matrix(tb.m), rank(), 4)) << b << " m";
      EXPECT_VECTOR_NEAR(opt.state.at(b).v, expected_shard(tb.as_matrix(tb.v), rank(), 4)) << b << " v";
    }
  }
}

std::vector<ZeroDPStage3FCLayer*> pointers(AdamSetup& s) { return {&s.layers[0], &s.layers[1]}; }

}  // namespace

TEST(Part9Adam, ThreeStepsMatchUnshardedAdam) {
  AdamSetup s = make_setup();
  ZeroDPAdam opt(pointers(s), 0.01);
  run_and_compare(s, opt, 3);
}

TEST(Part9Adam, UsesTheGivenHyperparameters) {
  AdamSetup s = make_setup();
  ZeroDPAdam opt(pointers(s), 0.05, 0.8, 0.99, 1e-3);
  run_and_compare(s, opt, 4);
}

TEST(Part9Adam, MomentsAreTheSizeOfTheLocalShard) {
  AdamSetup s = make_setup();
  ZeroDPAdam opt(pointers(s), 0.01);
  for (auto& layer : s.layers) {
    layer.grad_w_shard.setConstant(0.5);
    layer.grad_b_shard.setConstant(0.5);
  }
  opt.step();
  EXPECT_EQ(opt.state.size(), 4u) << "one entry per layer and parameter: 0.w, 0.b, 1.w, 1.b";
  for (int l = 0; l < 2; ++l) {
    for (const char* p : {".w", ".b"}) {
      const std::string key = std::to_string(l) + p;
      if (!opt.state.count(key)) continue;
      const Eigen::Index shard = p[1] == 'w' ? s.layers[l].w_shard.size() : s.layers[l].b_shard.size();
      EXPECT_EQ(opt.state.at(key).m.size(), shard) << key << ": m must be the size of the local shard, not the full tensor";
      EXPECT_EQ(opt.state.at(key).v.size(), shard) << key << ": v must be the size of the local shard, not the full tensor";
    }
  }
}

// Padding has zero gradient forever, so it must stay exactly zero.
TEST(Part9Adam, PaddingStaysExactlyZero) {
  AdamSetup s = make_setup();
  ZeroDPAdam opt(pointers(s), 0.1);
  for (int t = 1; t <= 5; ++t) {
    for (int l = 0; l < 2; ++l) {
      s.layers[l].grad_w_shard = expected_shard(gradient(l, kShapes[l].in, kShapes[l].out, t), rank(), 4);
      s.layers[l].grad_b_shard = expected_shard(gradient(l, 1, kShapes[l].out, t), rank(), 4);
    }
    opt.step();
  }
  // Rank 3 holds the padding of layer 0's weights (16 slots for 15) and biases (8 for 5).
  if (rank() == 3) {
    EXPECT_EQ(s.layers[0].w_shard(3), 0.0);
    EXPECT_EQ(s.layers[0].b_shard(0), 0.0);
    EXPECT_EQ(s.layers[0].b_shard(1), 0.0);
  }
  if (rank() == 2) {
    EXPECT_EQ(s.layers[0].b_shard(1), 0.0);
  }
}

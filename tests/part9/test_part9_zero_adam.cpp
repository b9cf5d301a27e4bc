// Part 9, ZeroDPAdam::step: Adam on local shards only.
//   make test-part9
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part9*'
// The cases set the gradient shards themselves, so they depend on no other
// student function. The end-to-end case is test_part9_zero_training.cpp.
#include <cmath>
#include <vector>

#include "student_calls.h"
#include "zero_test_util.h"

using namespace kit;

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
  std::vector<ZeroLayer> layers;
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
void run_and_compare(AdamSetup& s, ZeroAdam& opt, int steps) {
  for (int t = 1; t <= steps; ++t) {
    SCOPED_TRACE("after step " + std::to_string(t));
    for (int l = 0; l < 2; ++l) {
      const Matrix gw = gradient(l, kShapes[l].in, kShapes[l].out, t), gb = gradient(l, 1, kShapes[l].out, t);
      s.layers[l].set_grad_w_shard(expected_shard(gw, rank(), 4));
      s.layers[l].set_grad_b_shard(expected_shard(gb, rank(), 4));
      s.weights[l].step(gw, t, opt.lr, opt.beta1, opt.beta2, opt.eps);
      s.biases[l].step(gb, t, opt.lr, opt.beta1, opt.beta2, opt.eps);
    }
    dtrain::student::step(opt);
    ASSERT_EQ(opt.step_idx(), t) << "step_idx counts the steps taken";
    for (int l = 0; l < 2; ++l) {
      const std::string w = std::to_string(l) + ".w", b = std::to_string(l) + ".b";
      ASSERT_TRUE(has_state(opt, w)) << "state must have the key \"" << w << "\"";
      ASSERT_TRUE(has_state(opt, b)) << "state must have the key \"" << b << "\"";
      const auto& tw = s.weights[l];
      const auto& tb = s.biases[l];
      EXPECT_VECTOR_NEAR(s.layers[l].w_shard(), expected_shard(tw.as_matrix(tw.p), rank(), 4)) << "layer " << l;
      EXPECT_VECTOR_NEAR(s.layers[l].b_shard(), expected_shard(tb.as_matrix(tb.p), rank(), 4)) << "layer " << l;
      EXPECT_VECTOR_NEAR(opt.moment(w, "m"), expected_shard(tw.as_matrix(tw.m), rank(), 4)) << w << " m";
      EXPECT_VECTOR_NEAR(opt.moment(w, "v"), expected_shard(tw.as_matrix(tw.v), rank(), 4)) << w << " v";
      EXPECT_VECTOR_NEAR(opt.moment(b, "m"), expected_shard(tb.as_matrix(tb.m), rank(), 4)) << b << " m";
      EXPECT_VECTOR_NEAR(opt.moment(b, "v"), expected_shard(tb.as_matrix(tb.v), rank(), 4)) << b << " v";
    }
  }
}

std::vector<ZeroLayer*> pointers(AdamSetup& s) { return {&s.layers[0], &s.layers[1]}; }

// Every rank's shards and moments after the three steps of
// ThreeStepsMatchUnshardedAndRecordedAdam, recorded from the reference (per rank: for layers 0 and 1, the
// w shard, b shard, then the m and v of w, then the m and v of b).
const std::vector<double> kRecorded[4][12] = {
    {
        {0.071573782321023474, -0.22259685624971334, 0.28976147592789053, -0.39449111963999162},  // layer 0 w
        {0.071573782321023474, -0.22259685624971334},  // layer 0 b
        {0.16410791898973764, 0.06909569601568756, -0.069791027841395487, -0.18728713075719461},  // layer 0 w.m
        {0.001552567824806635, 0.0015927051551087176, 0.0017256063181795326, 0.0020204707656299717},  // layer 0 w.v
        {0.16410791898973764, 0.06909569601568756},  // layer 0 b.m
        {0.001552567824806635, 0.0015927051551087176},  // layer 0 b.v
        {0.081537912558538039, -0.21273158731957167, 0.29949064225418459},  // layer 1 w
        {0.081537912558538039},  // layer 1 b
        {0.16681791898973763, 0.071805696015687565, -0.067081027841395496},  // layer 1 w.m
        {0.0015906534653419946, 0.0016116276306794889, 0.0017141849747659885},  // layer 1 w.v
        {0.16681791898973763},  // layer 1 b.m
        {0.0015906534653419946},  // layer 1 b.v
    },
    {
        {0.52928111188858573, -0.57388548996331712, 0.71735058980207389, -0.7990214645621031},  // layer 0 w
        {0.28976147592789053, -0.39449111963999162},  // layer 0 b
        {-0.22281062628355391, -0.15145821252928324, 0.00042758692341048066, 0.16425409922234901},  // layer 0 w.m
        {0.0022763930140896681, 0.0023394077021491513, 0.002392596456233066, 0.0026820750275807111},  // layer 0 w.v
        {-0.069791027841395487, -0.18728713075719461},  // layer 0 b.m
        {0.0017256063181795326, 0.0020204707656299717},  // layer 0 b.v
        {-0.38461195411613169, 0.53926481512056179, -0.56395306360638853},  // layer 1 w
        {-0.21273158731957167},  // layer 1 b
        {-0.18457713075719459, -0.2201006262835539, -0.14874821252928322},  // layer 1 w.m
        {0.0019816296183373561, 0.0022270029843338402, 0.0023030751314462288},  // layer 1 w.v
        {0.071805696015687565},  // layer 1 b.m
        {0.0016116276306794889},  // layer 1 b.v
    },
    {
        {0.87139859509820161, -1.0283493341032097, 1.0776108069226911, -1.2098245965163266},  // layer 0 w
        {0.52928111188858573, 0},  // layer 0 b
        {0.26010226300076011, 0.23566309680654504, 0.094239855838972569, -0.10295324806938744},  // layer 0 w.m
        {0.0030813840562477681, 0.0032596859157337289, 0.0032456336238821165, 0.0034297612424980225},  // layer 0 w.v
        {-0.22281062628355391, 0},  // layer 0 b.m
        {0.0022763930140896681, 0},  // layer 0 b.v
        {0.72718477728258102, -0.78923066313522805, 0.88136835845891326},  // layer 1 w
        {0},  // layer 1 b
        {0.0031375869234104847, 0.16696409922234903, 0.2628122630007601},  // layer 1 w.m
        {0.0023884494522679145, 0.0027148739089700421, 0.0031380272447394846},  // layer 1 w.v
        {0},  // layer 1 b.m
        {0},  // layer 1 b.v
    },
    {
        {1.3057286298308137, -1.3707279805223542, 1.5259716433609574, 0},  // layer 0 w
        {0, 0},  // layer 0 b
        {-0.26308868051592682, -0.30542358322103524, -0.2018275865837944, 0},  // layer 0 w.m
        {0.0039177955815257433, 0.0043022601325533039, 0.0043188311528725102, 0},  // layer 0 w.v
        {0, 0},  // layer 0 b.m
        {0, 0},  // layer 0 b.v
        {-1.0183753318107009, 0, 0},  // layer 1 w
        {0},  // layer 1 b
        {0.23837309680654506, 0, 0},  // layer 1 w.m
        {0.0033143449756480809, 0, 0},  // layer 1 w.v
        {0},  // layer 1 b.m
        {0},  // layer 1 b.v
    },
};

}  // namespace

// Checked against the unsharded twin after every step, then against values
// recorded from the reference after the last.
TEST(Part9Adam, ThreeStepsMatchUnshardedAndRecordedAdam) {
  AdamSetup s = make_setup();
  ZeroAdam opt(pointers(s), 0.01);
  run_and_compare(s, opt, 3);
  const auto& recorded = kRecorded[rank()];
  for (int l = 0; l < 2; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const std::string w = std::to_string(l) + ".w", b = std::to_string(l) + ".b";
    if (!has_state(opt, w) || !has_state(opt, b)) continue;  // run_and_compare reported it
    const Vector got[6] = {s.layers[l].w_shard(), s.layers[l].b_shard(), opt.moment(w, "m"),
                           opt.moment(w, "v"),   opt.moment(b, "m"),   opt.moment(b, "v")};
    const char* names[6] = {"w_shard", "b_shard", "m of w", "v of w", "m of b", "v of b"};
    for (int q = 0; q < 6; ++q) {
      const auto& values = recorded[l * 6 + q];
      EXPECT_VECTOR_NEAR(got[q], Eigen::Map<const Vector>(values.data(), static_cast<Eigen::Index>(values.size())))
          << names[q];
    }
  }
}

TEST(Part9Adam, UsesTheGivenHyperparameters) {
  AdamSetup s = make_setup();
  ZeroAdam opt(pointers(s), 0.05, 0.8, 0.99, 1e-3);
  run_and_compare(s, opt, 4);
}

TEST(Part9Adam, MomentsAreTheSizeOfTheLocalShard) {
  AdamSetup s = make_setup();
  ZeroAdam opt(pointers(s), 0.01);
  for (auto& layer : s.layers) {
    layer.set_grad_w_shard(Vector::Constant(layer.grad_w_shard().size(), 0.5));
    layer.set_grad_b_shard(Vector::Constant(layer.grad_b_shard().size(), 0.5));
  }
  dtrain::student::step(opt);
  EXPECT_EQ(opt.state_keys().size(), 4u) << "one entry per layer and parameter: 0.w, 0.b, 1.w, 1.b";
  for (int l = 0; l < 2; ++l) {
    for (const char* p : {".w", ".b"}) {
      const std::string key = std::to_string(l) + p;
      if (!has_state(opt, key)) continue;
      const Eigen::Index shard = p[1] == 'w' ? s.layers[l].w_shard().size() : s.layers[l].b_shard().size();
      EXPECT_EQ(opt.moment(key, "m").size(), shard) << key << ": m must be the size of the local shard, not the full tensor";
      EXPECT_EQ(opt.moment(key, "v").size(), shard) << key << ": v must be the size of the local shard, not the full tensor";
    }
  }
}

// Padding has zero gradient forever, so it must stay exactly zero.
TEST(Part9Adam, PaddingStaysExactlyZero) {
  AdamSetup s = make_setup();
  ZeroAdam opt(pointers(s), 0.1);
  for (int t = 1; t <= 5; ++t) {
    for (int l = 0; l < 2; ++l) {
      s.layers[l].set_grad_w_shard(expected_shard(gradient(l, kShapes[l].in, kShapes[l].out, t), rank(), 4));
      s.layers[l].set_grad_b_shard(expected_shard(gradient(l, 1, kShapes[l].out, t), rank(), 4));
    }
    dtrain::student::step(opt);
  }
  // Rank 3 holds the padding of layer 0's weights (16 slots for 15) and biases (8 for 5).
  if (rank() == 3) {
    EXPECT_EQ(s.layers[0].w_shard()(3), 0.0);
    EXPECT_EQ(s.layers[0].b_shard()(0), 0.0);
    EXPECT_EQ(s.layers[0].b_shard()(1), 0.0);
  }
  if (rank() == 2) {
    EXPECT_EQ(s.layers[0].b_shard()(1), 0.0);
  }
}

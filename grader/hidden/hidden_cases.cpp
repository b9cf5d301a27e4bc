// The grader's hidden cases (never shipped to students). Inputs are built
// here and pass through salted() (kit_test.h): the course's secret salt, in
// grader/hidden/expected.txt beside the expected outputs the reference gave
// (`make hidden-data`, staff), makes the values, so this file holds no
// secret: a platform's image may carry it. Each case's outputs on every
// rank are judged against the recorded ones.
//   tools/kitrun -n 8 build/reference/kit_tests --gtest_filter='Hidden*'   (the 8-rank suites)
// They cover other shapes and rank counts than the public cases: mp 2 and 8,
// dp 2, 3 and 8, padding corner cases, and Adam over several steps.
#include <cstdio>

#include "data_parallel_preprocess.h"
#include "func_impl.h"
#include "recorded.h"
#include "zero_dp_stage3.h"
#include "student_calls.h"
#include "zero_test_util.h"

using namespace kit;
using dtrain::ZeroDPAdam;
using dtrain::ZeroDPStage3FCLayer;

namespace {

Matrix row(const Vector& v) { return v.transpose(); }
Matrix row(const Labels& v) { return v.cast<double>().transpose(); }

// mp groups of `mp` neighbouring ranks, as get_info would make them.
Communicator mp_group(int mp) { return world().split(rank() / mp, rank() % mp); }
// Groups of `size` consecutive ranks; the last may be smaller.
Communicator blocks_of(int size) { return world().split(rank() / size, rank() % size); }

// Rank r's (rows, cols) block: distinct, non-integer values.
Matrix block_of(int r, int rows, int cols) { return salted((arange(rows, cols, 1000.0 * r).array() * 0.5 + 0.25).matrix()); }

}  // namespace

// ---- Part 1 ----

TEST(HiddenPart1DataSplit, ThreeByFourOnTwentyFourRows) {
  const Matrix x = salted(arange(24, 5, 0.5));
  Labels y(24);
  for (int i = 0; i < 24; ++i) y(i) = (7 * i) % 10;
  for (int r = 0; r < 12; ++r) {
    const auto [xs, ys] = dtrain::student::split_data(x, y, 3, 4, r);
    EXPECT_RECORDED("x" + std::to_string(r), xs);
    EXPECT_RECORDED("y" + std::to_string(r), row(ys));
  }
}

TEST(HiddenPart1DataSplit, ThreeGroupsAndEightGroups) {
  const Matrix x = salted(arange(24, 2, 100));
  Labels y(24);
  for (int i = 0; i < 24; ++i) y(i) = i % 10;
  for (int r = 0; r < 3; ++r) EXPECT_RECORDED("dp3_" + std::to_string(r), dtrain::student::split_data(x, y, 1, 3, r).first);
  for (int r = 0; r < 8; ++r) EXPECT_RECORDED("dp8_" + std::to_string(r), dtrain::student::split_data(x, y, 1, 8, r).first);
  EXPECT_THROW(dtrain::student::split_data(x, y, 1, 5, 0), std::invalid_argument);
}

// ---- Part 2 ----

namespace {
void record_info(int mp, int dp, bool fc1, bool megatron, int in_dim, int out_dim) {
  dtrain::ParallelInfo info = dtrain::student::get_info(world(), rank(), mp, dp, fc1, megatron, in_dim, out_dim);
  Matrix mine = salted(arange(1, 4, 10.0 * rank())), mp_sum(1, 4), dp_sum(1, 4);
  info.mp_comm.allreduce(mine, mp_sum);
  info.dp_comm.allreduce(mine, dp_sum);
  EXPECT_RECORDED("info", mat(1, 8, {double(info.mp_idx), double(info.dp_idx), double(info.part_in_dim),
                                     double(info.part_out_dim), double(info.mp_comm.rank()), double(info.mp_comm.size()),
                                     double(info.dp_comm.rank()), double(info.dp_comm.size())}));
  EXPECT_RECORDED("mp_sum", mp_sum);
  EXPECT_RECORDED("dp_sum", dp_sum);
}
}  // namespace

TEST(HiddenPart2GetInfo, NaiveMp2Dp4Fc1) { record_info(2, 4, true, false, 784, 256); }
TEST(HiddenPart2GetInfo, MegatronMp8Dp1Fc2) { record_info(8, 1, false, true, 256, 10); }
TEST(HiddenPart2GetInfo, MegatronMp4Dp2Fc1) { record_info(4, 2, true, true, 784, 256); }
TEST(HiddenPart2GetInfo, NaiveMp1Dp8Fc2) { record_info(1, 8, false, false, 256, 10); }

// ---- Parts 3 to 6: mp 2 (four groups) and mp 8 ----

TEST(HiddenPart3NaiveForward, InputMp2ThreeRows) {
  Communicator g = mp_group(2);
  EXPECT_RECORDED("x", dtrain::student::naive_collect_forward_input(block_of(rank(), 3, 4), g, 2));
}
TEST(HiddenPart3NaiveForward, InputMp8OneRow) {
  EXPECT_RECORDED("x", dtrain::student::naive_collect_forward_input(block_of(rank(), 1, 2), world(), 8));
}
TEST(HiddenPart3NaiveForward, OutputMp8FiveRows) {
  EXPECT_RECORDED("out", dtrain::student::naive_collect_forward_output(block_of(rank(), 5, 3), world(), 8));
}
TEST(HiddenPart3NaiveForward, OutputMp2SixRows) {
  Communicator g = mp_group(2);
  EXPECT_RECORDED("out", dtrain::student::naive_collect_forward_output(block_of(rank(), 6, 5), g, 2));
}

TEST(HiddenPart4MegatronForward, OutputMp8) {
  EXPECT_RECORDED("out", dtrain::student::megatron_collect_forward_output(block_of(rank(), 4, 10), world(), 8));
}
TEST(HiddenPart4MegatronForward, OutputMp2) {
  Communicator g = mp_group(2);
  EXPECT_RECORDED("out", dtrain::student::megatron_collect_forward_output(block_of(rank(), 3, 10), g, 2));
}
TEST(HiddenPart4MegatronForward, InputMp8) {
  EXPECT_RECORDED("x", dtrain::student::megatron_collect_forward_input(block_of(rank(), 2, 32), world(), 8));
}

TEST(HiddenPart5NaiveBackward, OutputGradMp8) {
  EXPECT_RECORDED("g", dtrain::student::naive_collect_backward_output(block_of(0, 3, 16), rank(), 8));
}
TEST(HiddenPart5NaiveBackward, OutputGradMp2) {
  EXPECT_RECORDED("g", dtrain::student::naive_collect_backward_output(block_of(1, 4, 10), rank() % 2, 2));
}
TEST(HiddenPart5NaiveBackward, GradXMp8) {
  EXPECT_RECORDED("gx", dtrain::student::naive_collect_backward_x(block_of(rank(), 3, 16), world(), 8));
}
TEST(HiddenPart5NaiveBackward, GradXMp2) {
  Communicator g = mp_group(2);
  EXPECT_RECORDED("gx", dtrain::student::naive_collect_backward_x(block_of(rank(), 5, 6), g, 2));
}

TEST(HiddenPart6MegatronBackward, OutputGradMp8) {
  EXPECT_RECORDED("g", dtrain::student::megatron_collect_backward_output(block_of(2, 3, 10), rank(), 8));
}
TEST(HiddenPart6MegatronBackward, GradXMp2) {
  Communicator g = mp_group(2);
  EXPECT_RECORDED("gx", dtrain::student::megatron_collect_backward_x(block_of(rank(), 4, 7), g, 2));
}

// ---- Part 7: dp 2, 3 and 8 ----

namespace {
void record_average(Communicator& dp) {
  const auto [w, b] = dtrain::student::collect_weight_grad(block_of(rank(), 3, 4), block_of(rank(), 1, 4), dp);
  EXPECT_RECORDED("w", w);
  EXPECT_RECORDED("b", b);
}
}  // namespace

TEST(HiddenPart7WeightGrad, Dp8) { record_average(world()); }
TEST(HiddenPart7WeightGrad, Dp2Groups) {
  Communicator dp = world().split(rank() % 4, rank() / 4);
  record_average(dp);
}
TEST(HiddenPart7WeightGrad, Dp3Groups) {
  Communicator dp = blocks_of(3);
  record_average(dp);
}

// ---- Part 8 ----

TEST(HiddenPart8Partition, PaddingCornerCases) {
  const struct {
    int rows, cols, parts;
  } shapes[] = {{1, 2, 8}, {5, 7, 3}, {4, 6, 8}, {3, 3, 2}, {10, 1, 4}, {1, 1, 1}};
  for (const auto& s : shapes) {
    const Matrix t = salted(arange(s.rows, s.cols, 3.5));
    for (int idx = 0; idx < s.parts; ++idx) {
      const auto [shard, size] = dtrain::student::partition_flat_tensor(t, idx, s.parts);
      const std::string label = std::to_string(s.rows) + "x" + std::to_string(s.cols) + "/" +
                                std::to_string(s.parts) + "/" + std::to_string(idx);
      EXPECT_RECORDED(label, row(shard));
      EXPECT_RECORDED(label + "/size", mat(1, 1, {double(size)}));
    }
  }
}

namespace {
// Functions, not constants: the rank's MPI side salts them, once a case runs.
Matrix kW() { return salted(arange(7, 5, 1) / 10.0); }  // 35 weights: padded for 2, 3 and 8 ranks
Matrix kB() { return salted(arange(1, 5, -2)); }        // 5 biases
}  // namespace

TEST(HiddenPart8Forward, Dp8) {
  ZeroDPStage3FCLayer layer = layer_from_full(world(), kW(), kB());
  EXPECT_RECORDED("out", dtrain::student::forward(layer, block_of(rank(), 3, 7) / 1000.0));
}
TEST(HiddenPart8Forward, Dp2AndDp3) {
  Communicator two = blocks_of(2), three = blocks_of(3);
  for (Communicator* group : {&two, &three}) {
    ZeroDPStage3FCLayer layer = layer_from_full(*group, kW(), kB());
    EXPECT_RECORDED("out" + std::to_string(group->size()), dtrain::student::forward(layer, block_of(rank(), 2, 7) / 100.0));
  }
}

namespace {
void record_backward(Communicator& group, const std::string& tag) {
  ZeroDPStage3FCLayer layer = layer_from_full(group, kW(), kB());
  layer.x = block_of(rank(), 4, 7) / 1000.0;
  EXPECT_RECORDED(tag + "grad_x", dtrain::student::backward(layer, block_of(7 - rank(), 4, 5) / 1000.0));
  EXPECT_RECORDED(tag + "grad_w_shard", row(layer.grad_w_shard));
  EXPECT_RECORDED(tag + "grad_b_shard", row(layer.grad_b_shard));
}
}  // namespace

TEST(HiddenPart8Backward, Dp8) { record_backward(world(), ""); }

// As the public case decides: a second backward overwrites the shards.
TEST(HiddenPart8Backward, SecondCallOverwritesOnEightRanks) {
  ZeroDPStage3FCLayer layer = layer_from_full(world(), kW(), kB());
  layer.x = block_of(rank(), 3, 7) / 1000.0;
  const Matrix grad_out = block_of(rank(), 3, 5) / 1000.0;
  dtrain::student::backward(layer, grad_out);
  const Vector first_w = layer.grad_w_shard, first_b = layer.grad_b_shard;
  dtrain::student::backward(layer, grad_out);
  EXPECT_VECTOR_NEAR(layer.grad_w_shard, first_w);
  EXPECT_VECTOR_NEAR(layer.grad_b_shard, first_b);
}
TEST(HiddenPart8Backward, Dp3Groups) {
  Communicator three = blocks_of(3);
  record_backward(three, "dp3/");
}

// ---- Part 9: five steps on 8 ranks and on groups of 3 ----

namespace {
void record_adam(Communicator& group) {
  std::vector<ZeroDPStage3FCLayer> layers;
  layers.reserve(2);
  layers.push_back(layer_from_full(group, kW(), kB()));
  layers.push_back(layer_from_full(group, salted(arange(5, 3, -4) / 7.0), salted(arange(1, 3, 1))));
  ZeroDPAdam opt({&layers[0], &layers[1]}, 0.02, 0.85, 0.995, 1e-6);
  for (int t = 1; t <= 5; ++t) {
    for (auto& layer : layers) {
      const Matrix step = salted(mat(1, 1, {0.3 * t + group.rank()}));
      layer.grad_w_shard = (Vector::LinSpaced(layer.w_shard.size(), -1.0, 1.0).array() * step(0, 0)).sin();
      layer.grad_b_shard = Vector::Constant(layer.b_shard.size(), 0.1 * t - 0.2 * group.rank() + step(0, 0));
    }
    dtrain::student::step(opt);
  }
  for (int l = 0; l < 2; ++l) {
    const std::string k = std::to_string(l);
    EXPECT_RECORDED(k + "w", row(layers[l].w_shard));
    EXPECT_RECORDED(k + "b", row(layers[l].b_shard));
    ASSERT_EQ(opt.state.count(k + ".w"), 1u) << "state needs the key " << k << ".w";
    ASSERT_EQ(opt.state.count(k + ".b"), 1u) << "state needs the key " << k << ".b";
    EXPECT_RECORDED(k + "w.m", row(opt.state.at(k + ".w").m));
    EXPECT_RECORDED(k + "w.v", row(opt.state.at(k + ".w").v));
    EXPECT_RECORDED(k + "b.v", row(opt.state.at(k + ".b").v));
  }
}
}  // namespace

TEST(HiddenPart9Adam, FiveStepsDp8) { record_adam(world()); }
TEST(HiddenPart9Adam, FiveStepsDp3Groups) {
  Communicator three = blocks_of(3);
  record_adam(three);
}

// The public training case, longer: 80 iterations on 8000 samples. The
// reference reaches 0.8175 (default learning rate 0.003); the threshold
// leaves almost 5 points.
constexpr double kLongerTrainingThreshold = 0.77;
TEST(HiddenPart9Training, OneEpochOfEightThousandSamples) {
  const double accuracy = zero_training_accuracy(8000, 1200, 100);
  if (rank() == 0)
    std::printf("    test accuracy after one epoch: %.4f (threshold %.2f)\n", accuracy, kLongerTrainingThreshold);
  EXPECT_GE(accuracy, kLongerTrainingThreshold) << "the ZeRO model did not learn enough in one epoch (handout: Part 9)";
}

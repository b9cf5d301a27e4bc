// Part 8, the ZeRO stage-3 FC layer: partition_flat_tensor and forward
// (part8_forward), backward (part8_backward).
//   make test-part8
//   tools/kitrun -n 1 build/student/kit_tests --gtest_filter='Part8Partition*'
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part8Forward*:Part8Backward*'
// Forward and backward cases build their layers from shards the test cuts
// itself, so they do not depend on partition_flat_tensor; backward cases set
// the saved input themselves, so they do not depend on forward.
#include "zero_dp_stage3.h"
#include "student_calls.h"
#include "zero_test_util.h"

using namespace kit;

namespace {

void expect_partition(const Matrix& tensor, int parts) {
  const int size = static_cast<int>((tensor.size() + parts - 1) / parts);
  for (int idx = 0; idx < parts; ++idx) {
    SCOPED_TRACE("shard " + std::to_string(idx) + " of " + std::to_string(parts));
    const auto [shard, shard_size] = dtrain::student::partition_flat_tensor(tensor, idx, parts);
    EXPECT_EQ(shard_size, size) << "the shard size counts the padding";
    EXPECT_VECTOR_NEAR(shard, expected_shard(tensor, idx, parts));
  }
}

// The seed's forward and backward layers.
const Matrix kSeedW = mat(2, 4, {11, 6, 2, 3, 4, 5, 7, 8});
const Matrix kSeedB = mat(1, 4, {1, 0, 2, 1});
const Matrix kSeedX = mat(2, 2, {1, 2, 3, 4});

// Ranks {0,1} and {2,3} as two dp groups of two; ranks {0,1,2} and {3} as groups of three and one.
Communicator pairs() { return world().split(rank() / 2, rank() % 2); }
Communicator threes() { return world().split(rank() < 3 ? 0 : 1, rank()); }

// A layer big enough that keeping its full weight (4 MiB) is unmistakable:
// element i of its row-major weight is i / (in x out). The test never holds
// it whole, which would take most of a driven harness's memory
// (kit/limits.py): it makes this rank's shard, and products a block of
// rows at a time.
constexpr int kBigIn = 1024, kBigOut = 512, kBigBatch = 8, kBigBlock = 64;
constexpr double kBigNumel = double(kBigIn) * kBigOut;
Matrix big_rows(int first, int n) { return arange(n, kBigOut, double(first) * kBigOut) / kBigNumel; }

ZeroLayer big_layer() {
  const int ranks = world().size();
  const Eigen::Index shard = static_cast<Eigen::Index>(kBigNumel) / ranks;  // no padding: 4 ranks divide it
  const Vector w_shard = (Vector::LinSpaced(shard, 0, double(shard - 1)).array() + double(rank() * shard)) / kBigNumel;
  return layer_from_shards(world(), kBigIn, kBigOut, w_shard, Vector::Zero((kBigOut + ranks - 1) / ranks));
}

// x W, (rows, kBigOut), and g W^T, (rows, kBigIn).
Matrix times_big(const Matrix& x) {
  Matrix out = Matrix::Zero(x.rows(), kBigOut);
  for (int k = 0; k < kBigIn; k += kBigBlock) out += x.middleCols(k, kBigBlock) * big_rows(k, kBigBlock);
  return out;
}
Matrix times_big_transposed(const Matrix& g) {
  Matrix out(g.rows(), kBigIn);
  for (int k = 0; k < kBigIn; k += kBigBlock) out.middleCols(k, kBigBlock) = g * big_rows(k, kBigBlock).transpose();
  return out;
}


}  // namespace

// ---- partition_flat_tensor (part8_forward) ----

TEST(Part8Partition, SeedDivisibleCase) {
  const Matrix tensor = mat(2, 8, {58, 77, 56, 81, 31, 45, 38, 16, 71, 64, 60, 52, 93, 43, 79, 15});
  const auto [shard, size] = dtrain::student::partition_flat_tensor(tensor, 0, 4);
  EXPECT_EQ(size, 4);
  EXPECT_VECTOR_NEAR(shard, vec({58, 77, 56, 81}));
}

TEST(Part8Partition, SeedPaddingCase) {
  const Matrix tensor = mat(3, 13, {98, 77, 86, 83, 7,  44, 33, 52, 34, 22, 28, 33, 42, 97, 11, 97, 88, 39, 74, 58,
                                    98, 15, 53, 64, 73, 39, 41, 45, 91, 35, 49, 92, 68, 10, 50, 50, 43, 76, 8});
  const auto [shard, size] = dtrain::student::partition_flat_tensor(tensor, 3, 4);
  EXPECT_EQ(size, 10);
  EXPECT_VECTOR_NEAR(shard, vec({49, 92, 68, 10, 50, 50, 43, 76, 8, 0}));
}

TEST(Part8Partition, EveryShardOfTwoAndThree) {
  expect_partition(arange(3, 5, 1), 2);  // 15 elements: shards of 8, one padding zero
  expect_partition(arange(4, 4, 1), 3);  // 16 elements: shards of 6, two padding zeros
}

TEST(Part8Partition, ExactMultipleHasNoPadding) {
  expect_partition(arange(2, 6, 1), 4);
  expect_partition(arange(1, 8, 1), 8);
}

TEST(Part8Partition, TensorSmallerThanShardCount) {
  expect_partition(mat(1, 3, {7, 8, 9}), 4);  // one element each, the last shard all padding
  expect_partition(mat(1, 1, {5}), 8);
}

// ---- forward (part8_forward) ----

TEST(Part8Forward, SeedDivisibleCase) {
  ZeroLayer layer = layer_from_full(world(), kSeedW, kSeedB);
  EXPECT_MATRIX_NEAR(dtrain::student::forward(layer, kSeedX), mat(2, 4, {20, 16, 18, 20, 50, 38, 36, 42}));
}

TEST(Part8Forward, SeedPaddingCase) {
  const Matrix w = mat(3, 8, {59, 74, 43, 93, 10, 96, 4, 22, 85, 1, 51, 63, 16, 20, 1, 19, 34, 0, 5, 7, 8, 9, 3, 6});
  const Matrix b = mat(1, 8, {48, 98, 55, 5, 43, 66, 93, 50});
  ZeroLayer layer = layer_from_full(world(), w, b);
  EXPECT_MATRIX_NEAR(dtrain::student::forward(layer, mat(2, 3, {2, 1, 3, 4, 0, 5})),
                     mat(2, 8, {353, 247, 207, 275, 103, 305, 111, 131, 454, 394, 252, 412, 123, 495, 124, 168}));
}

TEST(Part8Forward, ConstructorPartitionsGivenWeights) {
  ZeroLayer layer = partitioned_layer(world(), 2, 4, 4, kSeedW, kSeedB);
  EXPECT_EQ(layer.w_shard_size(), 2);
  EXPECT_EQ(layer.b_shard_size(), 1);
  EXPECT_MATRIX_NEAR(dtrain::student::forward(layer, kSeedX), mat(2, 4, {20, 16, 18, 20, 50, 38, 36, 42}));
}

TEST(Part8Forward, PaddedLayerInGroupsOfTwoAndThree) {
  const Matrix w = arange(3, 5, 1), b = arange(1, 5, -2);  // 15 and 5 elements: padded for 2 and 3 ranks
  const Matrix x = arange(2, 3, rank());                    // rank-encoded input
  Matrix expected = x * w;
  expected.rowwise() += b.row(0);
  Communicator groups[] = {pairs(), threes()};
  for (Communicator& group : groups) {
    ZeroLayer layer = layer_from_full(group, w, b);
    EXPECT_MATRIX_NEAR(dtrain::student::forward(layer, x), expected) << "with " << group.size() << " ranks";
  }
}

TEST(Part8Forward, SavesItsInputForBackward) {
  ZeroLayer layer = layer_from_full(world(), kSeedW, kSeedB);
  dtrain::student::forward(layer, kSeedX);
  EXPECT_MATRIX_NEAR(layer.x(), kSeedX) << "forward must save its input in x";
}

TEST(Part8Forward, KeepsNoFullWeightBetweenCalls) {
  const Matrix x = arange(kBigBatch, kBigIn, 0.0) / 1000.0;
  const Matrix expected = times_big(x);
  ZeroLayer layer = big_layer();
  Matrix out;
  // Every call is checked against the memory rule (framework/guards/zero_rules.h).
  for (int call = 1; call <= 2; ++call) out = dtrain::student::forward(layer, x);
  EXPECT_MATRIX_NEAR(out, expected);
  EXPECT_EQ(layer.w_shard().size(), kBigIn * kBigOut / 4) << "w_shard must stay this rank's shard";
}

// ZeRO-3's forward all-gathers the two shards, nothing more (SPEC section 4).
TEST(Part8Forward, MovesOnlyWhatStageThreeNeeds) {
  const Matrix w = arange(3, 5, 1), b = arange(1, 5, -2);  // shards of 4 and 2 on 4 ranks, padded
  ZeroLayer layer = layer_from_full(world(), w, b);
  dtrain::student::forward(layer, arange(2, 3, rank()));  // the call's traffic is checked (framework/guards/zero_rules.h)
}

// ---- backward (part8_backward) ----

// ZeRO-3's backward all-gathers the weight and reduce-scatters both
// gradients, nothing more: the bias is not needed to compute a gradient.
TEST(Part8Backward, MovesOnlyWhatStageThreeNeeds) {
  const Matrix w = arange(3, 5, 1), b = arange(1, 5, -2);
  ZeroLayer layer = layer_from_full(world(), w, b);
  layer.set_x(arange(2, 3, rank()));
  dtrain::student::backward(layer, arange(2, 5, 1) / 10.0);  // the call's traffic is checked (framework/guards/zero_rules.h)
}

TEST(Part8Backward, SeedDivisibleCase) {
  ZeroLayer layer = layer_from_full(world(), kSeedW, kSeedB);
  layer.set_x(kSeedX);
  const Matrix grad_x = dtrain::student::backward(layer, mat(2, 4, {1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_MATRIX_NEAR(grad_x, mat(2, 2, {41, 67, 129, 163}));
  // Every rank feeds the same data, so each shard is 4x the one-rank gradient.
  const Vector w_shards[4] = {vec({64, 80}), vec({96, 112}), vec({88, 112}), vec({136, 160})};
  EXPECT_VECTOR_NEAR(layer.grad_w_shard(), w_shards[rank()]) << "grad_w_shard must be the reduce-scatter SUM";
  EXPECT_VECTOR_NEAR(layer.grad_b_shard(), vec({24.0 + 8 * rank()})) << "grad_b_shard must be the reduce-scatter SUM";
}

// backward sets the gradient shards; it does not add to what they held (the
// training loop calls zero_grad, but a layer must not rely on it).
TEST(Part8Backward, SecondCallOverwritesTheGradientShards) {
  ZeroLayer layer = layer_from_full(world(), kSeedW, kSeedB);
  layer.set_x(kSeedX);
  const Matrix grad_out = mat(2, 4, {1, 2, 3, 4, 5, 6, 7, 8});
  dtrain::student::backward(layer, grad_out);
  const Vector first_w = layer.grad_w_shard(), first_b = layer.grad_b_shard();
  dtrain::student::backward(layer, grad_out);
  EXPECT_VECTOR_NEAR(layer.grad_w_shard(), first_w) << "a second backward must overwrite grad_w_shard, not add to it";
  EXPECT_VECTOR_NEAR(layer.grad_b_shard(), first_b) << "a second backward must overwrite grad_b_shard, not add to it";
}

TEST(Part8Backward, SeedPaddingCase) {
  ZeroLayer layer = layer_from_full(world(), mat(2, 3, {2, 1, 3, 4, 0, 5}), mat(1, 3, {1, 2, 3}));
  layer.set_x(mat(1, 2, {2, 1}));
  EXPECT_MATRIX_NEAR(dtrain::student::backward(layer, mat(1, 3, {3, 4, 5})), mat(1, 2, {25, 37}));
  const Vector w_shards[4] = {vec({24, 32}), vec({40, 12}), vec({16, 20}), vec({0, 0})};
  const Vector b_shards[4] = {vec({12}), vec({16}), vec({20}), vec({0})};
  EXPECT_VECTOR_NEAR(layer.grad_w_shard(), w_shards[rank()]);
  EXPECT_VECTOR_NEAR(layer.grad_b_shard(), b_shards[rank()]);
  EXPECT_EQ(layer.w_shard_size(), 2) << "6 weights over 4 ranks: shards of 2, padding included";
}

// Each rank has its own input; the gradient shards are the sum over the group.
TEST(Part8Backward, RankEncodedInputsInGroupsOfTwoAndThree) {
  const Matrix w = arange(3, 5, 1), b = arange(1, 5, 1);
  const Matrix grad_out = arange(2, 5, 1) / 10.0;
  Communicator groups[] = {pairs(), threes()};
  for (Communicator& group : groups) {
    SCOPED_TRACE("group of " + std::to_string(group.size()));
    const int first = rank() - group.rank();
    Matrix sum_grad_w = Matrix::Zero(3, 5);
    for (int r = first; r < first + group.size(); ++r) sum_grad_w += arange(2, 3, r).transpose() * grad_out;
    const Matrix sum_grad_b = group.size() * grad_out.colwise().sum();
    ZeroLayer layer = layer_from_full(group, w, b);
    layer.set_x(arange(2, 3, rank()));
    EXPECT_MATRIX_NEAR(dtrain::student::backward(layer, grad_out), Matrix(grad_out * w.transpose()));
    EXPECT_VECTOR_NEAR(layer.grad_w_shard(), expected_shard(sum_grad_w, group.rank(), group.size()));
    EXPECT_VECTOR_NEAR(layer.grad_b_shard(), expected_shard(sum_grad_b, group.rank(), group.size()));
  }
}

TEST(Part8Backward, KeepsNoFullWeightBetweenCalls) {
  const Matrix x = arange(kBigBatch, kBigIn, 0.0) / 1000.0;
  const Matrix grad_out = arange(kBigBatch, kBigOut, 0.0) / 1000.0;
  const Matrix expected = times_big_transposed(grad_out);
  ZeroLayer layer = big_layer();
  layer.set_x(x);
  Matrix grad_x;
  // Every call is checked against the memory rule (framework/guards/zero_rules.h).
  for (int call = 1; call <= 2; ++call) grad_x = dtrain::student::backward(layer, grad_out);
  EXPECT_MATRIX_NEAR(grad_x, expected);
  EXPECT_EQ(layer.grad_w_shard().size(), kBigIn * kBigOut / 4) << "grad_w_shard must be this rank's shard";
}

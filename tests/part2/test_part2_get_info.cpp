// Part 2, get_info. Eight ranks, mp-major numbering.
//   make test-part2
//   tools/kitrun -n 8 build/student/kit_tests --gtest_filter='Part2*'
#include "func_impl.h"
#include "kit_test.h"
#include "student_calls.h"

using namespace kit;
using dtrain::ParallelInfo;

namespace {

struct Layer {
  bool is_fc1, megatron;
  int in_dim, out_dim;
  int part_in_dim, part_out_dim;  // expected
};

// Rank r contributes row r of the seed's input_array, 10r + (0..9). Summing
// it over mp_comm and over dp_comm shows exactly which ranks each holds.
Matrix contribution(int r) { return arange(1, 10, 10.0 * r); }

void check_info(int mp_size, int dp_size, const Layer& layer) {
  const int r = rank();
  ParallelInfo info = dtrain::student::get_info(world(), r, mp_size, dp_size, layer.is_fc1, layer.megatron, layer.in_dim,
                                       layer.out_dim);
  const int mp_idx = r % mp_size, dp_idx = r / mp_size;
  EXPECT_EQ(info.mp_idx, mp_idx) << "mp_idx of rank " << r;
  EXPECT_EQ(info.dp_idx, dp_idx) << "dp_idx of rank " << r;
  EXPECT_EQ(info.part_in_dim, layer.part_in_dim) << "part_in_dim";
  EXPECT_EQ(info.part_out_dim, layer.part_out_dim) << "part_out_dim";
  ASSERT_EQ(info.mp_comm.size(), mp_size) << "mp_comm.size()";
  ASSERT_EQ(info.dp_comm.size(), dp_size) << "dp_comm.size()";
  // The naive gather stacks blocks in communicator-rank order, so the order matters.
  EXPECT_EQ(info.mp_comm.rank(), mp_idx) << "mp_comm.rank() must equal mp_idx";
  EXPECT_EQ(info.dp_comm.rank(), dp_idx) << "dp_comm.rank() must equal dp_idx";

  Matrix mp_sum(1, 10), dp_sum(1, 10), mp_expected = Matrix::Zero(1, 10), dp_expected = Matrix::Zero(1, 10);
  info.mp_comm.allreduce(contribution(r), mp_sum);
  info.dp_comm.allreduce(contribution(r), dp_sum);
  for (int m = 0; m < mp_size; ++m) mp_expected += contribution(dp_idx * mp_size + m);
  for (int d = 0; d < dp_size; ++d) dp_expected += contribution(d * mp_size + mp_idx);
  EXPECT_MATRIX_NEAR(mp_sum, mp_expected) << "allreduce over mp_comm reached the wrong ranks";
  EXPECT_MATRIX_NEAR(dp_sum, dp_expected) << "allreduce over dp_comm reached the wrong ranks";
}

}  // namespace

// The seed's four cases: mp 2 x dp 4, in_dim 768, expected sums
// mp group d: 40d + 10 + 2j, dp group m: 120 + 40m + 4j (closed forms of the seed's arrays).
TEST(Part2GetInfo, Fc1NaiveMp2Dp4) { check_info(2, 4, {true, false, 768, 256, 768, 128}); }
TEST(Part2GetInfo, Fc2NaiveMp2Dp4) { check_info(2, 4, {false, false, 256, 10, 256, 5}); }
TEST(Part2GetInfo, Fc1MegatronMp2Dp4) { check_info(2, 4, {true, true, 768, 256, 768, 128}); }
TEST(Part2GetInfo, Fc2MegatronMp2Dp4) { check_info(2, 4, {false, true, 256, 10, 128, 10}); }

TEST(Part2GetInfo, SeedSumsInClosedForm) {
  // The seed's expected arrays, written out for rank 0 of the mp 2 x dp 4 grid.
  ParallelInfo info = dtrain::student::get_info(world(), rank(), 2, 4, true, false, 768, 256);
  Matrix mp_sum(1, 10), dp_sum(1, 10);
  info.mp_comm.allreduce(contribution(rank()), mp_sum);
  info.dp_comm.allreduce(contribution(rank()), dp_sum);
  const int d = rank() / 2, m = rank() % 2;
  Matrix mp_expected(1, 10), dp_expected(1, 10);
  for (int j = 0; j < 10; ++j) {
    mp_expected(0, j) = 40 * d + 10 + 2 * j;
    dp_expected(0, j) = 120 + 40 * m + 4 * j;
  }
  EXPECT_MATRIX_NEAR(mp_sum, mp_expected);
  EXPECT_MATRIX_NEAR(dp_sum, dp_expected);
}

TEST(Part2GetInfo, Fc2MegatronMp4Dp2) { check_info(4, 2, {false, true, 256, 10, 64, 10}); }
TEST(Part2GetInfo, Fc1MegatronMp8Dp1) { check_info(8, 1, {true, true, 784, 256, 784, 32}); }
TEST(Part2GetInfo, Fc2NaiveMp1Dp8) { check_info(1, 8, {false, false, 256, 10, 256, 10}); }

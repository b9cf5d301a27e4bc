// Part 7, data-parallel gradient averaging. Four ranks.
//   make test-part7
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part7*'
#include "func_impl.h"
#include "kit_test.h"
#include "student_calls.h"

using namespace kit;

namespace {

void expect_average(const Matrix& w, const Matrix& b, Communicator& dp_comm, const Matrix& w_sum, const Matrix& b_sum) {
  const auto [got_w, got_b] = dtrain::student::collect_weight_grad(w, b, dp_comm);
  const double n = dp_comm.size();
  EXPECT_MATRIX_NEAR(got_w, Matrix(w_sum / n)) << "grad_w must be the mean over the dp ranks";
  EXPECT_MATRIX_NEAR(got_b, Matrix(b_sum / n)) << "grad_b must be the mean over the dp ranks";
}

}  // namespace

// Seed case test_collect_weight_grad_1: (2, 8) and (1, 8) per rank.
TEST(Part7WeightGrad, SeedCaseTwoRows) {
  const Matrix w[4] = {
      mat(2, 8, {2, 4, 8, 9, 7, 1, 5, 8, 2, 0, 4, 7, 5, 7, 3, 0}), mat(2, 8, {2, 2, 5, 7, 1, 9, 0, 9, 7, 9, 6, 4, 3, 5, 5, 3}),
      mat(2, 8, {2, 5, 2, 6, 2, 2, 0, 7, 2, 8, 8, 0, 8, 0, 1, 3}), mat(2, 8, {2, 0, 4, 7, 9, 3, 4, 7, 1, 0, 0, 0, 1, 5, 0, 6})};
  const Matrix b[4] = {mat(1, 8, {5, 5, 2, 9, 9, 8, 8, 3}), mat(1, 8, {3, 8, 6, 8, 5, 4, 7, 3}),
                       mat(1, 8, {7, 0, 5, 7, 2, 8, 9, 5}), mat(1, 8, {7, 4, 5, 6, 7, 4, 6, 5})};
  expect_average(w[rank()], b[rank()], world(), mat(2, 8, {8, 11, 19, 29, 19, 15, 9, 31, 12, 17, 18, 11, 17, 17, 9, 12}),
                 mat(1, 8, {22, 17, 18, 30, 23, 24, 30, 16}));
}

// Seed case test_collect_weight_grad_2: (4, 8) and (1, 8) per rank.
TEST(Part7WeightGrad, SeedCaseFourRows) {
  const Matrix w[4] = {
      mat(4, 8, {5, 5, 7, 1, 0, 3, 3, 0, 1, 7, 5, 9, 6, 1, 5, 4, 6, 6, 6, 5, 2, 5, 5, 7, 4, 5, 3, 7, 5, 4, 1, 9}),
      mat(4, 8, {1, 9, 3, 0, 1, 9, 4, 7, 3, 1, 6, 1, 3, 2, 8, 0, 0, 4, 4, 1, 9, 4, 7, 1, 3, 7, 6, 0, 6, 8, 5, 3}),
      mat(4, 8, {8, 5, 2, 1, 5, 9, 7, 3, 1, 3, 1, 6, 2, 6, 5, 5, 1, 2, 5, 1, 1, 8, 9, 3, 3, 4, 1, 2, 7, 3, 7, 8}),
      mat(4, 8, {4, 4, 3, 1, 4, 9, 8, 3, 4, 2, 2, 0, 8, 9, 6, 1, 7, 3, 9, 8, 1, 2, 9, 3, 1, 2, 1, 5, 4, 3, 6, 0})};
  const Matrix b[4] = {mat(1, 8, {1, 0, 9, 8, 2, 3, 6, 3}), mat(1, 8, {7, 4, 8, 3, 7, 4, 9, 9}),
                       mat(1, 8, {2, 6, 1, 5, 2, 9, 9, 6}), mat(1, 8, {3, 1, 0, 4, 7, 2, 8, 2})};
  expect_average(w[rank()], b[rank()], world(),
                 mat(4, 8, {18, 23, 15, 3, 10, 30, 22, 13, 9, 13, 14, 16, 19, 18, 24, 10,
                            14, 15, 24, 15, 13, 19, 30, 14, 11, 18, 11, 14, 22, 18, 19, 20}),
                 mat(1, 8, {13, 11, 18, 20, 18, 18, 32, 20}));
}

// Rank-encoded gradients: rank r holds (r + 1) * (1, 2, ...), so the mean is
// (mean of r + 1) * (1, 2, ...).
TEST(Part7WeightGrad, RankEncodedFourRanks) {
  const Matrix base_w = arange(3, 5, 1), base_b = arange(1, 5, 1);
  const double scale = rank() + 1;
  expect_average(scale * base_w, scale * base_b, world(), 10 * base_w, 10 * base_b);
}

// Two dp groups of two ({0,2} and {1,3}, as for mp 2 x dp 2) average separately.
TEST(Part7WeightGrad, RankEncodedTwoGroupsOfTwo) {
  Communicator dp_comm = world().split(rank() % 2, rank() / 2);
  const Matrix base_w = arange(2, 3, 1), base_b = arange(1, 3, 1);
  const double scale = rank() + 1;
  const double group_sum = (rank() % 2 + 1) + (rank() % 2 + 3);
  expect_average(scale * base_w, scale * base_b, dp_comm, group_sum * base_w, group_sum * base_b);
}

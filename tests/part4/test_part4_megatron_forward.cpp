// Part 4, Megatron-style model-parallel forward (FC2's points A and B). Four ranks.
//   make test-part4
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part4*'
#include "func_impl.h"
#include "kit_test.h"
#include "student_calls.h"

using namespace kit;

namespace {
Matrix block_of(int r, int rows, int cols) { return arange(rows, cols, static_cast<double>(rows * cols * r)); }
}  // namespace

// Seed cases: the input already is what the rank's rows of W2 need.
TEST(Part4MegatronForward, InputOneRow) {
  EXPECT_MATRIX_NEAR(dtrain::student::megatron_collect_forward_input(block_of(rank(), 1, 4), world(), 4), block_of(rank(), 1, 4));
}

TEST(Part4MegatronForward, InputTwoRows) {
  EXPECT_MATRIX_NEAR(dtrain::student::megatron_collect_forward_input(block_of(rank(), 2, 2), world(), 4), block_of(rank(), 2, 2));
}

// Seed cases: the partial outputs sum to 24..36 on every rank.
TEST(Part4MegatronForward, OutputOneRow) {
  const Matrix got = dtrain::student::megatron_collect_forward_output(block_of(rank(), 1, 4), world(), 4);
  EXPECT_MATRIX_NEAR(got, mat(1, 4, {24, 28, 32, 36}));
}

TEST(Part4MegatronForward, OutputTwoRows) {
  const Matrix got = dtrain::student::megatron_collect_forward_output(block_of(rank(), 2, 2), world(), 4);
  EXPECT_MATRIX_NEAR(got, mat(2, 2, {24, 28, 32, 36}));
}

// Two groups of two: each sums only its own members' partials.
TEST(Part4MegatronForward, OutputInGroupsOfTwo) {
  Communicator pair = world().split(rank() / 2, rank() % 2);
  const Matrix got = dtrain::student::megatron_collect_forward_output(block_of(rank(), 3, 2), pair, 2);
  const int first = rank() / 2 * 2;
  EXPECT_MATRIX_NEAR(got, Matrix(block_of(first, 3, 2) + block_of(first + 1, 3, 2)));
}

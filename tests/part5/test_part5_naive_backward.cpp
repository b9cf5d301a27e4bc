// Part 5, naive model-parallel backward (FC2's points B and A). Four ranks.
//   make test-part5
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part5*'
#include "func_impl.h"
#include "kit_test.h"
#include "student_calls.h"

using namespace kit;

namespace {

// Rank r's partial grad_x holds rows*cols*r + (0, 1, ...).
Matrix partial_of(int r, int rows, int cols) { return arange(rows, cols, static_cast<double>(rows * cols * r)); }

// Columns [p*w, (p+1)*w) of the sum of the given ranks' partials.
Matrix summed_block(int rows, int cols, int p, int parts, int first_rank) {
  Matrix sum = Matrix::Zero(rows, cols);
  for (int q = 0; q < parts; ++q) sum += partial_of(first_rank + q, rows, cols);
  return sum.middleCols(p * cols / parts, cols / parts);
}

}  // namespace

// Seed cases: every rank passes the same output_grad and its own index.
TEST(Part5NaiveBackward, OutputGradOneRow) {
  const Matrix got = dtrain::student::naive_collect_backward_output(arange(1, 16), rank(), 4);
  EXPECT_MATRIX_NEAR(got, arange(1, 4, 4.0 * rank()));
}

TEST(Part5NaiveBackward, OutputGradTwoRows) {
  const Matrix got = dtrain::student::naive_collect_backward_output(arange(2, 8), rank(), 4);
  const double c = 2.0 * rank();
  EXPECT_MATRIX_NEAR(got, mat(2, 2, {c, c + 1, c + 8, c + 9}));
}

// Seed cases: the column block of the summed partials, e.g. 48, 52 on rank 0.
TEST(Part5NaiveBackward, GradXOneRow) {
  const Matrix got = dtrain::student::naive_collect_backward_x(partial_of(rank(), 1, 8), world(), 4);
  const double c = 48 + 8.0 * rank();
  EXPECT_MATRIX_NEAR(got, mat(1, 2, {c, c + 4}));
}

TEST(Part5NaiveBackward, GradXTwoRows) {
  const Matrix got = dtrain::student::naive_collect_backward_x(partial_of(rank(), 2, 8), world(), 4);
  const double c = 96 + 8.0 * rank();
  EXPECT_MATRIX_NEAR(got, mat(2, 2, {c, c + 4, c + 32, c + 36}));
}

TEST(Part5NaiveBackward, GradXThreeRowsInGroupsOfTwo) {
  Communicator pair = world().split(rank() / 2, rank() % 2);
  const Matrix got = dtrain::student::naive_collect_backward_x(partial_of(rank(), 3, 6), pair, 2);
  EXPECT_MATRIX_NEAR(got, summed_block(3, 6, rank() % 2, 2, rank() / 2 * 2));
}

TEST(Part5NaiveBackward, OutputGradThreeRowsOfTwoParts) {
  const Matrix grad = arange(3, 6, 100);
  const Matrix got = dtrain::student::naive_collect_backward_output(grad, rank() % 2, 2);
  EXPECT_MATRIX_NEAR(got, Matrix(grad.middleCols((rank() % 2) * 3, 3)));
}

// Part 6, Megatron-style model-parallel backward (FC2's points B and A). Four ranks.
//   make test-part6
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part6*'
#include "func_impl.h"
#include "kit_test.h"
#include "student_calls.h"

using namespace kit;

// Seed cases: every rank passes the same output_grad and its own index.
TEST(Part6MegatronBackward, OutputGradOneRow) {
  EXPECT_MATRIX_NEAR(dtrain::student::megatron_collect_backward_output(arange(1, 16), rank(), 4), arange(1, 16));
}

TEST(Part6MegatronBackward, OutputGradTwoRows) {
  EXPECT_MATRIX_NEAR(dtrain::student::megatron_collect_backward_output(arange(2, 8), rank(), 4), arange(2, 8));
}

// Seed cases: rank r passes a grad_x holding 8r.. or 16r...
TEST(Part6MegatronBackward, GradXOneRow) {
  const Matrix mine = arange(1, 8, 8.0 * rank());
  EXPECT_MATRIX_NEAR(dtrain::student::megatron_collect_backward_x(mine, world(), 4), mine);
}

TEST(Part6MegatronBackward, GradXTwoRows) {
  const Matrix mine = arange(2, 8, 16.0 * rank());
  EXPECT_MATRIX_NEAR(dtrain::student::megatron_collect_backward_x(mine, world(), 4), mine);
}

TEST(Part6MegatronBackward, GradXInGroupsOfTwo) {
  Communicator pair = world().split(rank() / 2, rank() % 2);
  const Matrix mine = arange(3, 5, 15.0 * rank());
  EXPECT_MATRIX_NEAR(dtrain::student::megatron_collect_backward_x(mine, pair, 2), mine);
}

// The hidden cases of Part 5 (grader/hidden/, never shipped to students): mp
// 2 (four groups) and mp 8. Inputs pass through salted() (kit_test.h): the
// course's salt, in grader/hidden/salt.txt beside the outputs the
// reference gave (`make hidden-data`, staff), makes the values, so this file
// holds no secret. Each case's outputs on every rank are judged against
// those.
//   tools/kitrun -n 8 build/reference/kit_tests --gtest_filter='HiddenPart5NaiveBackward.*'
#include "func_impl.h"
#include "../hidden_util.h"
#include "recorded.h"
#include "student_calls.h"

using namespace kit;
using namespace kit::hidden;

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

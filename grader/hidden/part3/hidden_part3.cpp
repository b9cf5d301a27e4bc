// The hidden cases of Part 3 (grader/hidden/, never shipped to students): mp
// 2 (four groups) and mp 8. Inputs pass through salted() (kit_test.h): the
// course's salt, in grader/hidden/salt.txt beside the outputs the
// reference gave (`make hidden-data`, staff), makes the values, so this file
// holds no secret. Each case's outputs on every rank are judged against
// those.
//   tools/kitrun -n 8 build/reference/kit_tests --gtest_filter='HiddenPart3NaiveForward.*'
#include "func_impl.h"
#include "../hidden_util.h"
#include "recorded.h"
#include "student_calls.h"

using namespace kit;
using namespace kit::hidden;

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

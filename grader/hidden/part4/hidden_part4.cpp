// The hidden cases of Part 4 (grader/hidden/, never shipped to students): mp
// 2 (four groups) and mp 8. Inputs pass through salted() (kit_test.h): the
// course's salt, in grader/hidden/salt.txt beside the outputs the
// reference gave (`make hidden-data`, staff), makes the values, so this file
// holds no secret. Each case's outputs on every rank are judged against
// those.
//   tools/kitrun -n 8 build/reference/kit_tests --gtest_filter='HiddenPart4MegatronForward.*'
#include "func_impl.h"
#include "../hidden_util.h"
#include "recorded.h"
#include "student_calls.h"

using namespace kit;
using namespace kit::hidden;

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

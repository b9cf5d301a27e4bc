// The hidden cases of Part 6 (grader/hidden/, never shipped to students): mp
// 2 (four groups) and mp 8. Inputs pass through salted() (kit_test.h): the
// course's salt, in grader/hidden/salt.txt beside the outputs the
// reference gave (`make hidden-data`, staff), makes the values, so this file
// holds no secret. Each case's outputs on every rank are judged against
// those.
//   tools/kitrun -n 8 build/reference/kit_tests --gtest_filter='HiddenPart6MegatronBackward.*'
#include "func_impl.h"
#include "../hidden_util.h"
#include "recorded.h"
#include "student_calls.h"

using namespace kit;
using namespace kit::hidden;

TEST(HiddenPart6MegatronBackward, OutputGradMp8) {
  EXPECT_RECORDED("g", dtrain::student::megatron_collect_backward_output(block_of(2, 3, 10), rank(), 8));
}
TEST(HiddenPart6MegatronBackward, GradXMp2) {
  Communicator g = mp_group(2);
  EXPECT_RECORDED("gx", dtrain::student::megatron_collect_backward_x(block_of(rank(), 4, 7), g, 2));
}

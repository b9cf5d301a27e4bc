// The hidden cases of Part 7 (grader/hidden/, never shipped to students): dp
// 2, 3 and 8. Inputs pass through salted() (kit_test.h): the course's salt,
// in grader/hidden/salt.txt beside the outputs the reference gave (`make
// hidden-data`, staff), makes the values, so this file holds no secret. Each
// case's outputs on every rank are judged against those.
//   tools/kitrun -n 8 build/reference/kit_tests --gtest_filter='HiddenPart7WeightGrad.*'
#include "func_impl.h"
#include "../hidden_util.h"
#include "recorded.h"
#include "student_calls.h"

using namespace kit;
using namespace kit::hidden;

namespace {
void record_average(Communicator& dp) {
  const auto [w, b] = dtrain::student::collect_weight_grad(block_of(rank(), 3, 4), block_of(rank(), 1, 4), dp);
  EXPECT_RECORDED("w", w);
  EXPECT_RECORDED("b", b);
}
}  // namespace

TEST(HiddenPart7WeightGrad, Dp8) { record_average(world()); }
TEST(HiddenPart7WeightGrad, Dp2Groups) {
  Communicator dp = world().split(rank() % 4, rank() / 4);
  record_average(dp);
}
TEST(HiddenPart7WeightGrad, Dp3Groups) {
  Communicator dp = blocks_of(3);
  record_average(dp);
}

// The hidden cases of Part 2 (grader/hidden/, never shipped to students):
// naive and Megatron layouts on mp 1, 2, 4 and 8. Inputs pass through
// salted() (kit_test.h): the course's salt, in grader/hidden/salt.txt
// beside the outputs the reference gave (`make hidden-data`, staff), makes
// the values, so this file holds no secret. Each case's outputs on every rank
// are judged against those.
//   tools/kitrun -n 8 build/reference/kit_tests --gtest_filter='HiddenPart2GetInfo.*'
#include "func_impl.h"
#include "../hidden_util.h"
#include "recorded.h"
#include "student_calls.h"

using namespace kit;
using namespace kit::hidden;

namespace {
void record_info(int mp, int dp, bool fc1, bool megatron, int in_dim, int out_dim) {
  dtrain::ParallelInfo info = dtrain::student::get_info(world(), rank(), mp, dp, fc1, megatron, in_dim, out_dim);
  Matrix mine = salted(arange(1, 4, 10.0 * rank())), mp_sum(1, 4), dp_sum(1, 4);
  info.mp_comm.allreduce(mine, mp_sum);
  info.dp_comm.allreduce(mine, dp_sum);
  EXPECT_RECORDED("info", mat(1, 8, {double(info.mp_idx), double(info.dp_idx), double(info.part_in_dim),
                                     double(info.part_out_dim), double(info.mp_comm.rank()), double(info.mp_comm.size()),
                                     double(info.dp_comm.rank()), double(info.dp_comm.size())}));
  EXPECT_RECORDED("mp_sum", mp_sum);
  EXPECT_RECORDED("dp_sum", dp_sum);
}
}  // namespace

TEST(HiddenPart2GetInfo, NaiveMp2Dp4Fc1) { record_info(2, 4, true, false, 784, 256); }
TEST(HiddenPart2GetInfo, MegatronMp8Dp1Fc2) { record_info(8, 1, false, true, 256, 10); }
TEST(HiddenPart2GetInfo, MegatronMp4Dp2Fc1) { record_info(4, 2, true, true, 784, 256); }
TEST(HiddenPart2GetInfo, NaiveMp1Dp8Fc2) { record_info(1, 8, false, false, 256, 10); }

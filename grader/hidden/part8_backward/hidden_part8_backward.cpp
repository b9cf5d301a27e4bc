// The hidden cases of Part 8's backward (grader/hidden/, never shipped to
// students): the backward on dp 3 and 8, called twice. Inputs pass through
// salted() (kit_test.h): the course's salt, in grader/hidden/expected.txt
// beside the outputs the reference gave (`make hidden-data`, staff), makes
// the values, so this file holds no secret. Each case's outputs on every rank
// are judged against those.
//   tools/kitrun -n 8 build/reference/kit_tests --gtest_filter='HiddenPart8Backward.*'
#include "../hidden_util.h"
#include "recorded.h"
#include "student_calls.h"
#include "zero_dp_stage3.h"
#include "zero_test_util.h"

using namespace kit;
using namespace kit::hidden;
using dtrain::ZeroDPStage3FCLayer;

namespace {
void record_backward(Communicator& group, const std::string& tag) {
  ZeroDPStage3FCLayer layer = layer_from_full(group, zero_w(), zero_b());
  layer.x = block_of(rank(), 4, 7) / 1000.0;
  EXPECT_RECORDED(tag + "grad_x", dtrain::student::backward(layer, block_of(7 - rank(), 4, 5) / 1000.0));
  EXPECT_RECORDED(tag + "grad_w_shard", row(layer.grad_w_shard));
  EXPECT_RECORDED(tag + "grad_b_shard", row(layer.grad_b_shard));
}
}  // namespace

TEST(HiddenPart8Backward, Dp8) { record_backward(world(), ""); }

// As the public case decides: a second backward overwrites the shards.
TEST(HiddenPart8Backward, SecondCallOverwritesOnEightRanks) {
  ZeroDPStage3FCLayer layer = layer_from_full(world(), zero_w(), zero_b());
  layer.x = block_of(rank(), 3, 7) / 1000.0;
  const Matrix grad_out = block_of(rank(), 3, 5) / 1000.0;
  dtrain::student::backward(layer, grad_out);
  const Vector first_w = layer.grad_w_shard, first_b = layer.grad_b_shard;
  dtrain::student::backward(layer, grad_out);
  EXPECT_VECTOR_NEAR(layer.grad_w_shard, first_w);
  EXPECT_VECTOR_NEAR(layer.grad_b_shard, first_b);
}
TEST(HiddenPart8Backward, Dp3Groups) {
  Communicator three = blocks_of(3);
  record_backward(three, "dp3/");
}

// The hidden cases of Part 8 (grader/hidden/, never shipped to students):
// padding corner cases, the forward on dp 2, 3 and 8, and the backward on dp
// 3 and 8, called twice. Inputs pass through salted() (kit_test.h): the
// course's salt, in grader/hidden/salt.txt beside the outputs the
// reference gave (`make hidden-data`, staff), makes the values, so this file
// holds no secret. Each case's outputs on every rank are judged against those.
//   tools/kitrun -n 8 build/reference/kit_tests --gtest_filter='HiddenPart8*'
#include "../hidden_util.h"
#include "recorded.h"
#include "student_calls.h"
#include "zero_dp_stage3.h"
#include "zero_test_util.h"

using namespace kit;
using namespace kit::hidden;

TEST(HiddenPart8Partition, PaddingCornerCases) {
  const struct {
    int rows, cols, parts;
  } shapes[] = {{1, 2, 8}, {5, 7, 3}, {4, 6, 8}, {3, 3, 2}, {10, 1, 4}, {1, 1, 1}};
  for (const auto& s : shapes) {
    const Matrix t = salted(arange(s.rows, s.cols, 3.5));
    for (int idx = 0; idx < s.parts; ++idx) {
      const auto [shard, size] = dtrain::student::partition_flat_tensor(t, idx, s.parts);
      const std::string label = std::to_string(s.rows) + "x" + std::to_string(s.cols) + "/" +
                                std::to_string(s.parts) + "/" + std::to_string(idx);
      EXPECT_RECORDED(label, row(shard));
      EXPECT_RECORDED(label + "/size", mat(1, 1, {double(size)}));
    }
  }
}

TEST(HiddenPart8Forward, Dp8) {
  ZeroLayer layer = layer_from_full(world(), zero_w(), zero_b());
  EXPECT_RECORDED("out", dtrain::student::forward(layer, block_of(rank(), 3, 7) / 1000.0));
}
TEST(HiddenPart8Forward, Dp2AndDp3) {
  Communicator two = blocks_of(2), three = blocks_of(3);
  for (Communicator* group : {&two, &three}) {
    ZeroLayer layer = layer_from_full(*group, zero_w(), zero_b());
    EXPECT_RECORDED("out" + std::to_string(group->size()), dtrain::student::forward(layer, block_of(rank(), 2, 7) / 100.0));
  }
}

namespace {
void record_backward(Communicator& group, const std::string& tag) {
  ZeroLayer layer = layer_from_full(group, zero_w(), zero_b());
  layer.set_x(block_of(rank(), 4, 7) / 1000.0);
  EXPECT_RECORDED(tag + "grad_x", dtrain::student::backward(layer, block_of(7 - rank(), 4, 5) / 1000.0));
  EXPECT_RECORDED(tag + "grad_w_shard", row(layer.grad_w_shard()));
  EXPECT_RECORDED(tag + "grad_b_shard", row(layer.grad_b_shard()));
}
}  // namespace

TEST(HiddenPart8Backward, Dp8) { record_backward(world(), ""); }

// As the public case decides: a second backward overwrites the shards.
TEST(HiddenPart8Backward, SecondCallOverwritesOnEightRanks) {
  ZeroLayer layer = layer_from_full(world(), zero_w(), zero_b());
  layer.set_x(block_of(rank(), 3, 7) / 1000.0);
  const Matrix grad_out = block_of(rank(), 3, 5) / 1000.0;
  dtrain::student::backward(layer, grad_out);
  const Vector first_w = layer.grad_w_shard(), first_b = layer.grad_b_shard();
  dtrain::student::backward(layer, grad_out);
  EXPECT_VECTOR_NEAR(layer.grad_w_shard(), first_w);
  EXPECT_VECTOR_NEAR(layer.grad_b_shard(), first_b);
}
TEST(HiddenPart8Backward, Dp3Groups) {
  Communicator three = blocks_of(3);
  record_backward(three, "dp3/");
}

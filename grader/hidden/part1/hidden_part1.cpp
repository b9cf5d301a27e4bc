// The hidden cases of Part 1 (grader/hidden/, never shipped to students): the
// split on 3 x 4 and on 3 and 8 groups, and a split that cannot be even.
// Inputs pass through salted() (kit_test.h): the course's salt, in
// grader/hidden/salt.txt beside the outputs the reference gave (`make
// hidden-data`, staff), makes the values, so this file holds no secret. Each
// case's outputs on every rank are judged against those.
//   tools/kitrun -n 1 build/reference/kit_tests --gtest_filter='HiddenPart1DataSplit.*'
#include "data_parallel_preprocess.h"
#include "../hidden_util.h"
#include "recorded.h"
#include "student_calls.h"

using namespace kit;
using namespace kit::hidden;

TEST(HiddenPart1DataSplit, ThreeByFourOnTwentyFourRows) {
  const Matrix x = salted(arange(24, 5, 0.5));
  Labels y(24);
  for (int i = 0; i < 24; ++i) y(i) = (7 * i) % 10;
  for (int r = 0; r < 12; ++r) {
    const auto [xs, ys] = dtrain::student::split_data(x, y, 3, 4, r);
    EXPECT_RECORDED("x" + std::to_string(r), xs);
    EXPECT_RECORDED("y" + std::to_string(r), row(ys));
  }
}

TEST(HiddenPart1DataSplit, ThreeGroupsAndEightGroups) {
  const Matrix x = salted(arange(24, 2, 100));
  Labels y(24);
  for (int i = 0; i < 24; ++i) y(i) = i % 10;
  for (int r = 0; r < 3; ++r) EXPECT_RECORDED("dp3_" + std::to_string(r), dtrain::student::split_data(x, y, 1, 3, r).first);
  for (int r = 0; r < 8; ++r) EXPECT_RECORDED("dp8_" + std::to_string(r), dtrain::student::split_data(x, y, 1, 8, r).first);
  EXPECT_THROW(dtrain::student::split_data(x, y, 1, 5, 0), std::invalid_argument);
}

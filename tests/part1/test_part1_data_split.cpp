// Part 1, split_data. One rank; each case checks the split of every rank.
//   make test-part1
//   tools/kitrun -n 1 build/student/kit_tests --gtest_filter='Part1*'
#include "data_parallel_preprocess.h"
#include "kit_test.h"
#include "student_calls.h"

using namespace kit;
using dtrain::student::split_data;

namespace {

// The seed's data: 8 rows of 2 features (note the repeated 6) and labels 1..8.
Matrix seed_x() { return mat(8, 2, {1, 2, 3, 4, 5, 6, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}); }
Labels seed_y() { return labels({1, 2, 3, 4, 5, 6, 7, 8}); }

// Every rank of the mp x dp grid must get rows [dp_idx * N/dp, (dp_idx+1) * N/dp).
void expect_split(const Matrix& x, const Labels& y, int mp_size, int dp_size) {
  const int rows = static_cast<int>(x.rows()) / dp_size;
  for (int r = 0; r < mp_size * dp_size; ++r) {
    SCOPED_TRACE("mp_size=" + std::to_string(mp_size) + " dp_size=" + std::to_string(dp_size) +
                 " rank=" + std::to_string(r));
    const auto [xs, ys] = split_data(x, y, mp_size, dp_size, r);
    const int first = (r / mp_size) * rows;
    EXPECT_MATRIX_NEAR(xs, Matrix(x.middleRows(first, rows)));
    EXPECT_MATRIX_NEAR(Matrix(ys.cast<double>().transpose()), Matrix(y.segment(first, rows).cast<double>().transpose()));
  }
}

}  // namespace

// Seed case test_mp_2_dp_1: no data parallelism, both ranks keep everything.
TEST(Part1DataSplit, Mp2Dp1KeepsAllRows) {
  const auto [x0, y0] = split_data(seed_x(), seed_y(), 2, 1, 0);
  EXPECT_MATRIX_NEAR(x0, seed_x());
  const auto [x1, y1] = split_data(seed_x(), seed_y(), 2, 1, 1);
  EXPECT_MATRIX_NEAR(x1, seed_x());
  EXPECT_EQ(y0, seed_y());
  EXPECT_EQ(y1, seed_y());
}

// Seed case test_mp_1_dp_2: two halves.
TEST(Part1DataSplit, Mp1Dp2Halves) {
  const auto [x0, y0] = split_data(seed_x(), seed_y(), 1, 2, 0);
  EXPECT_MATRIX_NEAR(x0, mat(4, 2, {1, 2, 3, 4, 5, 6, 6, 7}));
  EXPECT_EQ(y0, labels({1, 2, 3, 4}));
  const auto [x1, y1] = split_data(seed_x(), seed_y(), 1, 2, 1);
  EXPECT_MATRIX_NEAR(x1, mat(4, 2, {8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(y1, labels({5, 6, 7, 8}));
}

// Seed case test_mp_2_dp_2: ranks 0,1 share the first half, ranks 2,3 the second.
TEST(Part1DataSplit, Mp2Dp2GroupsShareHalves) {
  const Matrix first = mat(4, 2, {1, 2, 3, 4, 5, 6, 6, 7});
  const Matrix second = mat(4, 2, {8, 9, 10, 11, 12, 13, 14, 15});
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto [x, y] = split_data(seed_x(), seed_y(), 2, 2, r);
    EXPECT_MATRIX_NEAR(x, r < 2 ? first : second);
    EXPECT_EQ(y, r < 2 ? labels({1, 2, 3, 4}) : labels({5, 6, 7, 8}));
  }
}

// Seed case test_mp_2_dp_4: quarters, each shared by two neighbouring ranks.
TEST(Part1DataSplit, Mp2Dp4Quarters) {
  const Matrix quarters[4] = {mat(2, 2, {1, 2, 3, 4}), mat(2, 2, {5, 6, 6, 7}), mat(2, 2, {8, 9, 10, 11}),
                              mat(2, 2, {12, 13, 14, 15})};
  for (int r = 0; r < 8; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto [x, y] = split_data(seed_x(), seed_y(), 2, 4, r);
    EXPECT_MATRIX_NEAR(x, quarters[r / 2]);
    EXPECT_EQ(y, labels({2 * (r / 2) + 1, 2 * (r / 2) + 2}));
  }
}

// Rows encode their index, so any wrong block shows which one was taken.
TEST(Part1DataSplit, Mp4Dp2AndMp1Dp8OnIndexedRows) {
  const Matrix x = arange(16, 3);
  Labels y(16);
  for (int i = 0; i < 16; ++i) y(i) = 100 + i;
  expect_split(x, y, 4, 2);
  expect_split(x, y, 1, 8);
  expect_split(x, y, 8, 1);
}

TEST(Part1DataSplit, RowsNotDivisibleByDpSizeThrowInvalidArgument) {
  EXPECT_THROW(split_data(arange(6, 2), labels({0, 1, 2, 3, 4, 5}), 1, 4, 0), std::invalid_argument);
}

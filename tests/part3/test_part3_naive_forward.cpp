// Part 3, naive model-parallel forward (FC2's points A and B). Four ranks.
//   make test-part3
//   tools/kitrun -n 4 build/student/kit_tests --gtest_filter='Part3*'
#include "func_impl.h"
#include "kit_test.h"
#include "student_calls.h"

using namespace kit;

namespace {

using Collect = Matrix (*)(const Matrix&, dtrain::Communicator&, int);

// Rank r holds (rows, cols) values starting at rows*cols*r: its block of the
// global (rows, cols*P) matrix is columns [r*cols, (r+1)*cols).
Matrix block_of(int r, int rows, int cols) { return arange(rows, cols, static_cast<double>(rows * cols * r)); }

Matrix joined_blocks(int rows, int cols, int parts, int first_rank) {
  Matrix all(rows, cols * parts);
  for (int p = 0; p < parts; ++p) all.middleCols(p * cols, cols) = block_of(first_rank + p, rows, cols);
  return all;
}

// Two groups of two ranks ({0,1} and {2,3}) gather independently.
void expect_pairs_gather(Collect collect) {
  Communicator pair = world().split(rank() / 2, rank() % 2);
  const Matrix got = collect(block_of(rank(), 3, 2), pair, 2);
  EXPECT_MATRIX_NEAR(got, joined_blocks(3, 2, 2, rank() / 2 * 2));
}

// Seed cases: rank r holds 4r..4r+3 as (1, 4) or as (2, 2); the input and
// the output gather the same blocks the same way.
void expect_seed_one_row(Collect collect) {
  const Matrix got = collect(block_of(rank(), 1, 4), world(), 4);
  EXPECT_MATRIX_NEAR(got, arange(1, 16));
}
void expect_seed_two_rows(Collect collect) {
  const Matrix got = collect(block_of(rank(), 2, 2), world(), 4);
  EXPECT_MATRIX_NEAR(got, mat(2, 8, {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15}));
}

}  // namespace

TEST(Part3NaiveForward, InputOneRow) { expect_seed_one_row(dtrain::student::naive_collect_forward_input); }
TEST(Part3NaiveForward, InputTwoRows) { expect_seed_two_rows(dtrain::student::naive_collect_forward_input); }
TEST(Part3NaiveForward, OutputOneRow) { expect_seed_one_row(dtrain::student::naive_collect_forward_output); }
TEST(Part3NaiveForward, OutputTwoRows) { expect_seed_two_rows(dtrain::student::naive_collect_forward_output); }
TEST(Part3NaiveForward, InputThreeRowsInTwoGroupsOfTwo) { expect_pairs_gather(dtrain::student::naive_collect_forward_input); }
TEST(Part3NaiveForward, OutputThreeRowsInTwoGroupsOfTwo) { expect_pairs_gather(dtrain::student::naive_collect_forward_output); }

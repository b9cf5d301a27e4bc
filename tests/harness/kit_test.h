// kit_test.h: what every public and hidden test file uses. The MPI-aware
// harness (tests/harness/mpi_test_main.cpp, case_listener.cpp) runs each case on every rank and reports a
// failure on any rank on rank 0, naming the rank.
//
// A test file writes ordinary TEST(Part3NaiveForward, ...) cases. How many
// ranks a case runs on and how long it may take come from the run of the
// parts table (kit/part_table.py) whose filter selects it.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "comm.h"
#include "tensor.h"

namespace kit {

using dtrain::Communicator;
using dtrain::Labels;
using dtrain::Matrix;
using dtrain::Vector;

// All ranks of the job, for tests to hand to student code: a fresh copy of
// the world communicator for each case.
Communicator& world();
int rank();

// Matrices written out in the test, row by row.
Matrix mat(int rows, int cols, std::initializer_list<double> values);
Vector vec(std::initializer_list<double> values);
Labels labels(std::initializer_list<int> values);
// (rows, cols) holding start, start+1, ... in storage (row-major) order.
Matrix arange(int rows, int cols, double start = 0.0);

// The hidden cases' inputs pass through salted(): m * a + b, where a and b
// come from the course's secret salt and from m itself. The rank's MPI side
// salts it (comm_side_salt.h): the runner hands the salt to the sides of
// jobs of hidden cases only, and this process never holds it. So the hidden
// cases' source may be public (a platform's image) while their inputs are
// not; in a job without a salt salted() is the identity. Inside a case
// only (it is a request of the case's account).
Matrix salted(const Matrix& m);

// gtest predicate: same shape and every element within `tolerance` (absolute
// plus relative). On failure it names the first element that differs, both
// values, and how many elements differ.
::testing::AssertionResult matrices_near(const char* actual_expr, const char* expected_expr, const Matrix& actual,
                                         const Matrix& expected);
::testing::AssertionResult vectors_near(const char* actual_expr, const char* expected_expr, const Vector& actual,
                                        const Vector& expected);
std::string describe(const Matrix& m);  // "(2, 3) [[1, 2, 3], [4, 5, 6]]", elided when large

}  // namespace kit

#define EXPECT_MATRIX_NEAR(actual, expected) EXPECT_PRED_FORMAT2(::kit::matrices_near, actual, expected)
#define ASSERT_MATRIX_NEAR(actual, expected) ASSERT_PRED_FORMAT2(::kit::matrices_near, actual, expected)
#define EXPECT_VECTOR_NEAR(actual, expected) EXPECT_PRED_FORMAT2(::kit::vectors_near, actual, expected)

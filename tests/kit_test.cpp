// kit_test.cpp: the helpers of kit_test.h (matrices, comparisons).
#include "kit_test.h"

#include <cmath>
#include <map>
#include <sstream>

#include "harness.h"

namespace kit {

Communicator& world() {
  auto& current = harness::case_world();
  if (!current) throw std::logic_error("kit::world() is only available inside a test case");
  return *current;
}

int rank() { return world().rank(); }

Matrix mat(int rows, int cols, std::initializer_list<double> values) {
  if (static_cast<long>(values.size()) != static_cast<long>(rows) * cols) {
    throw std::invalid_argument("kit::mat: expected " + std::to_string(rows * cols) + " values, got " +
                                std::to_string(values.size()));
  }
  Matrix m(rows, cols);
  std::copy(values.begin(), values.end(), m.data());
  return m;
}

Vector vec(std::initializer_list<double> values) {
  Vector v(static_cast<Eigen::Index>(values.size()));
  std::copy(values.begin(), values.end(), v.data());
  return v;
}

Labels labels(std::initializer_list<int> values) {
  Labels v(static_cast<Eigen::Index>(values.size()));
  std::copy(values.begin(), values.end(), v.data());
  return v;
}

Matrix arange(int rows, int cols, double start) {
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = start + static_cast<double>(i);
  return m;
}

std::string describe(const Matrix& m) {
  constexpr Eigen::Index kMaxRows = 6, kMaxCols = 10;
  std::ostringstream out;
  out << "(" << m.rows() << ", " << m.cols() << ") [";
  for (Eigen::Index i = 0; i < std::min(m.rows(), kMaxRows); ++i) {
    out << (i ? ",\n      [" : "[");
    for (Eigen::Index j = 0; j < std::min(m.cols(), kMaxCols); ++j) out << (j ? ", " : "") << m(i, j);
    if (m.cols() > kMaxCols) out << ", ...";
    out << "]";
  }
  if (m.rows() > kMaxRows) out << ",\n      ...";
  out << "]";
  return out.str();
}

namespace {

bool close(double a, double e) { return std::abs(a - e) <= 1e-9 + 1e-9 * std::abs(e); }

::testing::AssertionResult compare(const char* actual_expr, const char* expected_expr, const Matrix& actual,
                                   const Matrix& expected) {
  std::ostringstream why;
  if (actual.rows() != expected.rows() || actual.cols() != expected.cols()) {
    why << actual_expr << " has shape (" << actual.rows() << ", " << actual.cols() << "), expected ("
        << expected.rows() << ", " << expected.cols() << ")";
  } else {
    for (Eigen::Index i = 0; i < actual.size() && why.tellp() == 0; ++i) {
      if (!close(actual.data()[i], expected.data()[i]))
        why << actual_expr << " differs at (" << i / actual.cols() << ", " << i % actual.cols() << "): expected "
            << expected.data()[i] << ", got " << actual.data()[i];
    }
    if (why.tellp() == 0) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << why.str() << "\n  expected " << expected_expr << " = " << describe(expected)
                                       << "\n  actual   " << actual_expr << " = " << describe(actual);
}

}  // namespace

::testing::AssertionResult matrices_near(const char* actual_expr, const char* expected_expr, const Matrix& actual,
                                         const Matrix& expected) {
  return compare(actual_expr, expected_expr, actual, expected);
}

::testing::AssertionResult vectors_near(const char* actual_expr, const char* expected_expr, const Vector& actual,
                                        const Vector& expected) {
  // A Vector is shown as one row so both read the same way.
  return compare(actual_expr, expected_expr, Matrix(actual.transpose()), Matrix(expected.transpose()));
}

}  // namespace kit

// kit_test.cpp: the helpers of kit_test.h (matrices, comparisons).
#include "kit_test.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "comm_runtime.h"
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

Matrix salted(const Matrix& m) {
  Matrix out = m;
  dtrain::CommAccess::salt(out.data(), static_cast<std::size_t>(out.size()));
  return out;
}

std::string describe(const Matrix& m) {
  constexpr Eigen::Index kMaxRows = 6, kMaxCols = 10;
  std::ostringstream out;
  out.precision(10);
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

double tolerance(double e) { return 1e-9 + 1e-9 * std::abs(e); }
bool close(double a, double e) { return std::abs(a - e) <= tolerance(e); }

// The shortest text that reads back as the same double: enough digits to
// show how two close numbers differ, and "2" for 2.
std::string exact(double v) {
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  return std::string(buf, end);
}

bool is_name(const char* expr) {
  for (const char* p = expr; *p; ++p)
    if (!(std::isalnum(static_cast<unsigned char>(*p)) || *p == '_' || *p == '.')) return false;
  return *expr != '\0';
}

// Values only: the test's expressions say nothing a student needs, except
// the name of a variable (got_w) when the test has one.
::testing::AssertionResult compare(const char* actual_expr, const Matrix& actual, const Matrix& expected) {
  const std::string what = is_name(actual_expr) ? actual_expr : "the result";
  std::ostringstream why;
  if (actual.rows() != expected.rows() || actual.cols() != expected.cols()) {
    why << what << " has shape (" << actual.rows() << ", " << actual.cols() << "), expected (" << expected.rows()
        << ", " << expected.cols() << ")";
  } else {
    Eigen::Index first = -1, wrong = 0;
    for (Eigen::Index i = 0; i < actual.size(); ++i) {
      if (close(actual.data()[i], expected.data()[i])) continue;
      if (first < 0) first = i;
      ++wrong;
    }
    if (first < 0) return ::testing::AssertionSuccess();
    const double e = expected.data()[first], a = actual.data()[first];
    why << what << " differs at (" << first / actual.cols() << ", " << first % actual.cols() << "): expected "
        << exact(e) << ", got " << exact(a) << " (difference " << std::setprecision(3) << a - e << ", tolerance "
        << tolerance(e) << "); " << wrong << " of " << actual.size() << " elements differ";
  }
  // The first difference and the count, no dump of values: a report stays
  // short however large the matrices (VERBOSE=1 shows every failure).
  return ::testing::AssertionFailure() << why.str();
}

}  // namespace

::testing::AssertionResult matrices_near(const char* actual_expr, const char* expected_expr, const Matrix& actual,
                                         const Matrix& expected) {
  (void)expected_expr;
  return compare(actual_expr, actual, expected);
}

::testing::AssertionResult vectors_near(const char* actual_expr, const char* expected_expr, const Vector& actual,
                                        const Vector& expected) {
  // A Vector is shown as one row so both read the same way.
  (void)expected_expr;
  return compare(actual_expr, Matrix(actual.transpose()), Matrix(expected.transpose()));
}

}  // namespace kit

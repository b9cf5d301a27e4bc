// tensor.cpp: the failure path of tensor.h's Eigen checks. The message names
// the student function that was running and its arguments' shapes (the
// ledger's StudentScope knows them), and says in words what the check means.
#include "tensor.h"

#include <cstring>
#include <string>
#include <stdexcept>

#include "call_context.h"
#include "check_failure.h"
#include "student_line.h"

namespace dtrain::detail {

namespace {

// Eigen's most common checks, by a piece of their text.
const char* meaning(const char* condition) {
  struct Known {
    const char* text;
    const char* meaning;
  };
  static const Known known[] = {
      {"invalid matrix product", "a matrix product A * B whose inner sizes differ (A.cols() != B.rows())"},
      {"rows == this->rows() && cols == this->cols()",
       "an assignment of a matrix of another shape into a block, a row, a column or another fixed-size "
       "destination (only a whole Matrix may change its shape)"},
      {"aLhs.rows() == aRhs.rows() && aLhs.cols() == aRhs.cols()",
       "a coefficient-wise operation (+, -, cwiseProduct, ...) on two matrices of different shapes"},
      {"startRow >= 0 && blockRows >= 0", "a block (block, middleRows, middleCols, ...) that reaches outside the matrix"},
      {"row >= 0 && row < rows()", "an index out of range"},
      {"index >= 0 && index < size()", "an index out of range"},
      {"rows >= 0 && (RowsAtCompileTime == Dynamic", "a negative size"},
  };
  for (const Known& k : known)
    if (std::strstr(condition, k.text) != nullptr) return k.meaning;
  return "usually two matrices of the wrong shapes, or an index out of range";
}

// The two numbers of the check's first comparison, when that comparison is
// what failed (a product's A.cols() and B.rows(), in our words A and B).
std::string sides_in_words(const char* condition, const CheckSides& sides) {
  if (!sides.known || sides.held) return "";
  if (std::strstr(condition, "invalid matrix product") != nullptr)
    return ": A has " + std::to_string(sides.left) + " column" + (sides.left == 1 ? "" : "s") + ", B has " +
           std::to_string(sides.right) + " row" + (sides.right == 1 ? "" : "s");
  const std::string text = condition;
  size_t at = std::string::npos, length = 0;
  for (const char* op : {" == ", " != ", " <= ", " >= ", " < ", " > "}) {
    const size_t found = text.find(op);
    if (found < at) at = found, length = std::strlen(op);
  }
  if (at == std::string::npos) return "";
  const size_t end = text.find(" &&", at);
  return ": " + text.substr(0, at) + " is " + std::to_string(sides.left) + ", " +
         text.substr(at + length, end == std::string::npos ? std::string::npos : end - at - length) + " is " +
         std::to_string(sides.right);
}

}  // namespace

}  // namespace dtrain::detail

namespace dtrain {

std::string check_failure_text(const CheckFailure& f) {
  std::string message = "Eigen check failed";
  if (const std::string function = ledger::function_now(); !function.empty()) {
    message += " in " + function;
    if (const std::string args = ledger::arguments_now(); !args.empty()) message += " (called with " + args + ")";
  }
  if (!f.where.empty()) message += " at " + f.where;
  message += ": " + f.what;
  if (!f.source.empty()) message += "\n  " + f.where + ": " + f.source;
  return message + f.more;
}

}  // namespace dtrain

namespace dtrain::detail {

[[noreturn]] static void fail_in_student_code(const std::string& what, const std::string& more) {
  const std::string where = student_line_now();
  throw StudentCheckFailed({what, where, where.empty() ? "" : student_source_now(), more});
}

void eigen_check_failed(const char* condition, const char* file, int line, CheckSides sides) {
  const char* base = std::strrchr(file, '/');
  fail_in_student_code(meaning(condition) + sides_in_words(condition, sides),
                       "\n  Eigen's check: " + std::string(condition) + " (" + (base ? base + 1 : file) + ":" +
                           std::to_string(line) + ")");
}

void product_shapes_failed(Eigen::Index a_rows, Eigen::Index a_cols, Eigen::Index b_rows, Eigen::Index b_cols) {
  fail_in_student_code("a matrix product A * B whose inner sizes differ: A is (" + std::to_string(a_rows) + ", " +
                           std::to_string(a_cols) + "), B is (" + std::to_string(b_rows) + ", " +
                           std::to_string(b_cols) + "); A's columns must equal B's rows",
                       "");
}

}  // namespace dtrain::detail

// The constructors tensor.h declares: Eigen's, with the kit's check first.
#undef DTRAIN_PRODUCT_OF
#define DTRAIN_PRODUCT_OF(L, R)                                                                     \
  template <>                                                                                        \
  Product<L, R, DefaultProduct>::Product(const L& lhs, const R& rhs) : m_lhs(lhs), m_rhs(rhs) {       \
    if (lhs.cols() != rhs.rows()) ::dtrain::detail::product_shapes_failed(lhs.rows(), lhs.cols(), rhs.rows(), rhs.cols()); \
  }
namespace Eigen {
DTRAIN_CHECKED_PRODUCTS
}  // namespace Eigen

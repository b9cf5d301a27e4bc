// tensor.h: the kit's matrix types and the one shape legend every header uses.
//
// Shape legend (used in a comment beside every matrix parameter in the kit):
//   B     rows of a batch (samples on this rank)
//   Din   input features of a layer      (784 for FC1, 256 for FC2)
//   H     hidden features                (256)
//   Dout  output features of a layer     (256 for FC1, 10 for FC2)
//   P     model-parallel size (mp_size) or, for ZeRO, data-parallel size
//   Din/P, Dout/P   a rank's block of a partitioned dimension
//
// Every Matrix is row-major, so its storage order is its MPI buffer order:
// a collective over a (B, Dout/P) matrix sends its B rows one after another.
#pragma once

#include <string>

// Eigen's own checks (matching shapes in a product, indices in range) stay on
// in every build and throw std::logic_error instead of aborting, so a shape
// mistake is a failed test case with a message, not a crash. On the failing
// path only, the check is evaluated once more through CheckSides, which keeps
// the two numbers of its first comparison (a product's A.cols() and
// B.rows()), so the message can show them.
#include <functional>
#include <type_traits>

// `CheckStart() <= a == b` is meant as (CheckStart() <= a) == b: no warning
// about it, in this header or where Eigen's headers expand the macro.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wparentheses"

namespace dtrain::detail {

struct CheckSides {
  long left = 0, right = 0;
  bool known = false;
  bool held = true;  // the first comparison's own result: false where it is what failed
  explicit operator bool() const { return false; }
};
template <typename T>
struct CheckSide {
  const T& value;
  explicit operator bool() const { return static_cast<bool>(value); }  // a check that is a ?: expression
};
struct CheckStart {};
template <typename T>
CheckSide<T> operator<=(CheckStart, const T& value) { return {value}; }
template <typename T, typename U, typename Compare>
CheckSides sides(const T& left, const U& right, Compare compare) {
  if constexpr (std::is_integral_v<T> && std::is_integral_v<U>)
    return {static_cast<long>(left), static_cast<long>(right), true, compare(static_cast<long>(left), static_cast<long>(right))};
  return {};
}
// The first comparison of the check, whatever follows it.
#define DTRAIN_CHECK_COMPARISON(op, compare) \
  template <typename T, typename U> \
  CheckSides operator op(CheckSide<T> left, const U& right) { return sides(left.value, right, compare<long>()); }
DTRAIN_CHECK_COMPARISON(==, std::equal_to)
DTRAIN_CHECK_COMPARISON(!=, std::not_equal_to)
DTRAIN_CHECK_COMPARISON(<, std::less)
DTRAIN_CHECK_COMPARISON(>, std::greater)
DTRAIN_CHECK_COMPARISON(<=, std::less_equal)
DTRAIN_CHECK_COMPARISON(>=, std::greater_equal)
#undef DTRAIN_CHECK_COMPARISON
// A check that starts with no comparison, or goes on after one.
#define DTRAIN_CHECK_REST(op) \
  template <typename T, typename U> \
  CheckSides operator op(CheckSide<T>, const U&) { return {}; } \
  template <typename U> \
  CheckSides operator op(CheckSides first, const U&) { return first; }
DTRAIN_CHECK_REST(&&)
DTRAIN_CHECK_REST(||)
DTRAIN_CHECK_REST(&)
DTRAIN_CHECK_REST(|)
DTRAIN_CHECK_REST(^)
#undef DTRAIN_CHECK_REST
inline CheckSides to_sides(CheckSides sides) { return sides; }
template <typename T>
CheckSides to_sides(CheckSide<T>) { return {}; }  // a check without a comparison: `m_isInitialized`

[[noreturn]] void eigen_check_failed(const char* condition, const char* file, int line, CheckSides sides);

}  // namespace dtrain::detail
#ifndef eigen_assert
#define eigen_assert(condition)                                                                              \
  ((condition) ? static_cast<void>(0)                                                                         \
               : ::dtrain::detail::eigen_check_failed(#condition, __FILE__, __LINE__,                         \
                                                      ::dtrain::detail::to_sides(                             \
                                                          ::dtrain::detail::CheckStart() <= condition)))
#endif

#include <Eigen/Dense>
#pragma GCC diagnostic pop

namespace dtrain {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;  // flat shards (ZeRO)
using Labels = Eigen::VectorXi;  // class ids, one per row of a batch

namespace detail {
// A product's shapes disagree: A is (a_rows, a_cols), B is (b_rows, b_cols).
[[noreturn]] void product_shapes_failed(Eigen::Index a_rows, Eigen::Index a_cols, Eigen::Index b_rows,
                                        Eigen::Index b_cols);
}  // namespace detail

}  // namespace dtrain

// Eigen's own check of a product sees only A.cols() and B.rows(). For the
// operands student code multiplies (a Matrix, a Map of one, their
// transposes), the product's constructor is the kit's (tensor.cpp): it
// checks first and names both shapes. Declared here, so that no file makes
// Eigen's version of these constructors.
#define DTRAIN_PRODUCT_OF(L, R) template <> Product<L, R, DefaultProduct>::Product(const L& lhs, const R& rhs);
#define DTRAIN_PRODUCTS_WITH(L)                                                                  \
  DTRAIN_PRODUCT_OF(L, ::dtrain::Matrix)                                                         \
  DTRAIN_PRODUCT_OF(L, Transpose<::dtrain::Matrix>)                                              \
  DTRAIN_PRODUCT_OF(L, Transpose<const ::dtrain::Matrix>)                                        \
  DTRAIN_PRODUCT_OF(L, Map<const ::dtrain::Matrix>)                                              \
  DTRAIN_PRODUCT_OF(L, Transpose<Map<const ::dtrain::Matrix>>)                                   \
  DTRAIN_PRODUCT_OF(L, Transpose<const Map<const ::dtrain::Matrix>>)
#define DTRAIN_CHECKED_PRODUCTS                         \
  DTRAIN_PRODUCTS_WITH(::dtrain::Matrix)                \
  DTRAIN_PRODUCTS_WITH(Transpose<::dtrain::Matrix>)     \
  DTRAIN_PRODUCTS_WITH(Transpose<const ::dtrain::Matrix>) \
  DTRAIN_PRODUCTS_WITH(Map<const ::dtrain::Matrix>)
namespace Eigen {
DTRAIN_CHECKED_PRODUCTS
}  // namespace Eigen

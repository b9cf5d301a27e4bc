// The products (framework/include/gemm.h): one process, no MPI.
//   build/framework_tests --gtest_filter='Gemm*'   (CTest: framework/units)
// Operands hold small integers, so every product is exact in double and each
// expected entry is a closed-form sum, whatever kernel runs.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "gemm.h"
#include "thrown.h"

using dtrain::gemm;
using dtrain::Matrix;
using dtrain::Vector;

namespace {

// m(i, j) = i - 2j + seed: distinct, small, exact.
Matrix filled(int rows, int cols, int seed) {
  Matrix m(rows, cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) m(i, j) = i - 2 * j + seed;
  return m;
}

// The product written out, one entry at a time.
Matrix by_definition(const Matrix& a, bool ta, const Matrix& b, bool tb) {
  const Matrix A = ta ? Matrix(a.transpose()) : a, B = tb ? Matrix(b.transpose()) : b;
  Matrix out = Matrix::Zero(A.rows(), B.cols());
  for (int i = 0; i < A.rows(); ++i)
    for (int j = 0; j < B.cols(); ++j)
      for (int k = 0; k < A.cols(); ++k) out(i, j) += A(i, k) * B(k, j);
  return out;
}

}  // namespace

TEST(Gemm, EveryTransposeIntoAMatrixItResizes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const Matrix a = ta ? filled(5, 3, 1) : filled(3, 5, 1);  // op(a): (3, 5)
      const Matrix b = tb ? filled(4, 5, 2) : filled(5, 4, 2);  // op(b): (5, 4)
      Matrix out(1, 1);
      gemm(a, ta, b, tb, out);
      EXPECT_EQ(out, by_definition(a, ta, b, tb)) << "transpose_a=" << ta << " transpose_b=" << tb;
    }
}

TEST(Gemm, TakesViewsOfFlatBuffers) {
  // ZeRO's case: the weight is a flat gathered buffer, the gradient goes
  // into the head of a padded flat buffer.
  const Vector flat_w = Eigen::Map<const Vector>(filled(3, 4, 3).data(), 12);
  const Eigen::Map<const Matrix> w(flat_w.data(), 3, 4);
  const Matrix x = filled(2, 3, 0);
  Matrix out;
  gemm(x, false, w, false, out);
  EXPECT_EQ(out, by_definition(x, false, Matrix(w), false));

  Vector padded = Vector::Constant(16, -7.0);  // (3 * 4 values, then 4 of padding)
  Eigen::Map<Matrix> head(padded.data(), 3, 4);
  gemm(x, true, out, false, head);
  EXPECT_EQ(Matrix(head), by_definition(x, true, out, false));
  EXPECT_EQ(padded.tail(4), Vector::Constant(4, -7.0)) << "the padding past the view was written";
}

TEST(Gemm, ABlockWithGapsBetweenItsRowsIsCopiedFirst) {
  const Matrix wide = filled(4, 6, 5);
  const Matrix x = filled(3, 4, 1);
  Matrix out;
  gemm(x, false, wide.leftCols(2), false, out);  // (4, 2) with an outer stride of 6
  EXPECT_EQ(out, by_definition(x, false, Matrix(wide.leftCols(2)), false));
}

TEST(Gemm, ShapeErrorsNameBothShapes) {
  const Matrix a = filled(3, 5, 0), b = filled(4, 2, 0);
  Matrix out;
  EXPECT_EQ(kit::what_thrown([&] { gemm(a, false, b, false, out); }),
            "gemm: op(a) is (3, 5), op(b) is (4, 2): op(a)'s columns must equal op(b)'s rows");
  Matrix wrong(2, 2);
  const Matrix c = filled(5, 2, 0);
  EXPECT_EQ(kit::what_thrown([&] { gemm(a, false, c, false, Eigen::Map<Matrix>(wrong.data(), 2, 2)); }),
            "gemm: the result is (2, 2), op(a) * op(b) is (3, 2)");
  Matrix square = filled(3, 3, 0);
  EXPECT_EQ(kit::what_thrown([&] { gemm(square, false, square, false, square); }),
            "gemm: the result must not share storage with an operand");
}

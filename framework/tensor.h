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
// mistake is a failed test case with a message, not a crash.
namespace dtrain::detail {
[[noreturn]] void eigen_check_failed(const char* condition, const char* file, int line);
}
#ifndef eigen_assert
#define eigen_assert(condition) \
  ((condition) ? static_cast<void>(0) : ::dtrain::detail::eigen_check_failed(#condition, __FILE__, __LINE__))
#endif

#include <Eigen/Dense>

namespace dtrain {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;  // flat shards (ZeRO)
using Labels = Eigen::VectorXi;  // class ids, one per row of a batch

}  // namespace dtrain

// gemm_kernel.cpp: one matrix product, compiled once per instruction set.
//
// CMake builds this file three times (see CMakeLists.txt, "gemm kernels"),
// each time with its own -m flags and two names on the command line:
//   KIT_GEMM_ENTRY   the function this copy defines (kit_gemm_avx2, ...)
//   Eigen            a private name for Eigen's namespace in this copy
// The second matters: Eigen's templates are instantiated in every object
// that uses them, and the linker keeps one copy per name. Under its own
// name, this copy's AVX code can never stand in for the generic copy that
// the rest of the kit calls on a CPU without AVX.
#include <cstddef>

#if !defined(KIT_GEMM_ENTRY)
#error "gemm_kernel.cpp is compiled by CMake with -DKIT_GEMM_ENTRY=... -DEigen=..."
#endif

// GCC 12 reports its own AVX-512 intrinsics (_mm512_extractf64x4_pd, whose
// "undefined" source operand is deliberate) as maybe-uninitialized wherever
// Eigen's AVX-512 packets inline them: a false report, silenced here only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Core>

namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using View = Eigen::Map<const RowMajor>;
using Out = Eigen::Map<RowMajor>;

}  // namespace

// a: (a_rows, a_cols), b: (b_rows, b_cols), out: (op(a) rows, op(b) cols), all row-major.
// The caller (gemm.cpp) has checked the shapes.
void KIT_GEMM_ENTRY(const double* a, std::ptrdiff_t a_rows, std::ptrdiff_t a_cols, bool transpose_a,
                    const double* b, std::ptrdiff_t b_rows, std::ptrdiff_t b_cols, bool transpose_b,
                    double* out) {
  const View ma(a, a_rows, a_cols);
  const View mb(b, b_rows, b_cols);
  Out mo(out, transpose_a ? a_cols : a_rows, transpose_b ? b_rows : b_cols);
  if (transpose_a && transpose_b) {
    mo.noalias() = ma.transpose() * mb.transpose();
  } else if (transpose_a) {
    mo.noalias() = ma.transpose() * mb;
  } else if (transpose_b) {
    mo.noalias() = ma * mb.transpose();
  } else {
    mo.noalias() = ma * mb;
  }
}

// gemm.cpp: see gemm.h.
#include "gemm.h"

#include <cstddef>
#include <cstdlib>
#include <stdexcept>
#include <string>

// This file is the one that knows which CPU it runs on (gemm.h).
#if defined(__x86_64__)
#define KIT_GEMM_X86 1
#else
#define KIT_GEMM_X86 0
#endif

// The copies of gemm_kernel.cpp: three on x86-64, the generic one elsewhere.
using GemmEntry = void (*)(const double*, std::ptrdiff_t, std::ptrdiff_t, bool, const double*, std::ptrdiff_t,
                           std::ptrdiff_t, bool, double*);
void kit_gemm_generic(const double*, std::ptrdiff_t, std::ptrdiff_t, bool, const double*, std::ptrdiff_t,
                      std::ptrdiff_t, bool, double*);
#if KIT_GEMM_X86
void kit_gemm_avx2(const double*, std::ptrdiff_t, std::ptrdiff_t, bool, const double*, std::ptrdiff_t,
                   std::ptrdiff_t, bool, double*);
void kit_gemm_avx512(const double*, std::ptrdiff_t, std::ptrdiff_t, bool, const double*, std::ptrdiff_t,
                     std::ptrdiff_t, bool, double*);
#endif

namespace dtrain {

namespace {

GemmKernel chosen_kernel() {
  const char* forced = std::getenv("KIT_GEMM");
  if (forced != nullptr && *forced != '\0') {
    for (GemmKernel k : {GemmKernel::generic, GemmKernel::avx2, GemmKernel::avx512}) {
      if (std::string(forced) != gemm_kernel_name(k)) continue;
      if (!gemm_kernel_runs_here(k))
        throw std::runtime_error(std::string("KIT_GEMM=") + forced + ": this CPU lacks its instructions");
      return k;
    }
    throw std::runtime_error(std::string("KIT_GEMM=") + forced + ": expected generic, avx2 or avx512");
  }
  if (gemm_kernel_runs_here(GemmKernel::avx512)) return GemmKernel::avx512;
  if (gemm_kernel_runs_here(GemmKernel::avx2)) return GemmKernel::avx2;
  return GemmKernel::generic;
}

}  // namespace

const char* gemm_kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::avx2: return "avx2";
    case GemmKernel::avx512: return "avx512";
    case GemmKernel::generic: break;
  }
  return "generic";
}

bool gemm_kernel_runs_here(GemmKernel kernel) {
#if KIT_GEMM_X86
  __builtin_cpu_init();
  switch (kernel) {
    case GemmKernel::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmKernel::avx512:
      // the flags gemm_kernel.cpp's AVX-512 copy is compiled with (CMakeLists.txt)
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmKernel::generic: break;
  }
  return true;
#else
  return kernel == GemmKernel::generic;
#endif
}

const char* gemm_kernels_here() {
#if KIT_GEMM_X86
  return "x86-64: Eigen compiled three times (generic SSE2, AVX2+FMA, AVX-512), those this CPU runs";
#else
  return "aarch64 (or another CPU): Eigen's one build, which uses NEON on aarch64";
#endif
}

GemmKernel gemm_kernel() {
  static const GemmKernel kernel = chosen_kernel();
  return kernel;
}

namespace {

// The kernels read dense row-major storage; a view with gaps between its
// rows (a block of columns) is copied first.
Matrix dense_copy(const MatrixView& m) { return m; }

std::string shape(Eigen::Index rows, Eigen::Index cols) {
  return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
}

}  // namespace

void gemm(const MatrixView& a, bool transpose_a, const MatrixView& b, bool transpose_b, Matrix& out) {
  const Eigen::Index m = transpose_a ? a.cols() : a.rows();
  const Eigen::Index n = transpose_b ? b.rows() : b.cols();
  if (out.rows() != m || out.cols() != n) out.resize(m, n);
  gemm_on(gemm_kernel(), a, transpose_a, b, transpose_b, out);
}

void gemm(const MatrixView& a, bool transpose_a, const MatrixView& b, bool transpose_b, MatrixTarget out) {
  gemm_on(gemm_kernel(), a, transpose_a, b, transpose_b, out);
}

void gemm_on(GemmKernel kernel, const MatrixView& a, bool transpose_a, const MatrixView& b, bool transpose_b,
             MatrixTarget out) {
  const Eigen::Index m = transpose_a ? a.cols() : a.rows();
  const Eigen::Index k = transpose_a ? a.rows() : a.cols();
  const Eigen::Index kb = transpose_b ? b.cols() : b.rows();
  const Eigen::Index n = transpose_b ? b.rows() : b.cols();
  if (!gemm_kernel_runs_here(kernel))
    throw std::logic_error(std::string("gemm: this CPU can't run the ") + gemm_kernel_name(kernel) + " kernel");
  if (k != kb)
    throw std::logic_error("gemm: op(a) is " + shape(m, k) + ", op(b) is " + shape(kb, n) +
                           ": op(a)'s columns must equal op(b)'s rows");
  if (out.rows() != m || out.cols() != n)
    throw std::logic_error("gemm: the result is " + shape(out.rows(), out.cols()) + ", op(a) * op(b) is " +
                           shape(m, n));
  if (out.outerStride() != out.cols())
    throw std::logic_error("gemm: the result must be dense row-major storage (a Matrix, or a Map of one)");
  if (out.data() != nullptr && (out.data() == a.data() || out.data() == b.data()))
    throw std::logic_error("gemm: the result must not share storage with an operand");
  if (m == 0 || n == 0) return;
  if (k == 0) {
    out.setZero();
    return;
  }
  if (a.outerStride() != a.cols()) return gemm_on(kernel, dense_copy(a), transpose_a, b, transpose_b, out);
  if (b.outerStride() != b.cols()) return gemm_on(kernel, a, transpose_a, dense_copy(b), transpose_b, out);
  GemmEntry entry = kit_gemm_generic;
#if KIT_GEMM_X86
  if (kernel == GemmKernel::avx512) entry = kit_gemm_avx512;
  if (kernel == GemmKernel::avx2) entry = kit_gemm_avx2;
#endif
  entry(a.data(), a.rows(), a.cols(), transpose_a, b.data(), b.rows(), b.cols(), transpose_b, out.data());
}

}  // namespace dtrain

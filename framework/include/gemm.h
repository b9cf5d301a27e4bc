// gemm.h: the layers' matrix products, on the fastest kernel this CPU runs.
//
// x86-64: the kit is built without -march so that its binaries run on any
// x86-64 grading host, which leaves Eigen at SSE2. The products that are most
// of a training epoch therefore go through here: the same Eigen code is
// compiled three times (gemm_kernel.cpp: plain x86-64, AVX2+FMA, AVX-512),
// and the first call picks the best one the CPU has. Only these entry points
// hold instructions beyond x86-64; `make bench` and staff/portable.py check it.
//
// aarch64 (arm64 Linux, a container on an Apple Silicon Mac): there is one
// kernel, Eigen's default build, which already uses NEON; every aarch64 CPU
// has NEON, so nothing is left to choose.
//
// KIT_GEMM=generic|avx2|avx512 in the environment forces a kernel (for
// comparisons; asking for one the CPU lacks is an error, not a crash).
#pragma once

#include "tensor.h"

namespace dtrain {

enum class GemmKernel { generic, avx2, avx512 };

const char* gemm_kernel_name(GemmKernel kernel);
bool gemm_kernel_runs_here(GemmKernel kernel);  // the CPU has the instructions
GemmKernel gemm_kernel();                       // the one the layers use (chosen once)
// Which kernels this architecture has, in words, for reports (gemm_peak).
const char* gemm_kernels_here();

// An operand: a Matrix, or a view of one's storage (an Eigen::Map over a flat
// buffer, a block of rows), passed without a copy.
using MatrixView = Eigen::Ref<const Matrix>;
// A result to write into in place: a Matrix of the right shape, or a Map.
using MatrixTarget = Eigen::Ref<Matrix>;

// out = op(a) * op(b), op(m) = m or m^T.   op(a): (M, K)   op(b): (K, N)   out: (M, N)
// out must not alias a or b. Students may call it too: Eigen's `*` compiles
// Eigen's product kernel into the file that uses it, which costs a few
// seconds on every rebuild of that file and runs at SSE2 speed on x86-64.
void gemm(const MatrixView& a, bool transpose_a, const MatrixView& b, bool transpose_b, Matrix& out);  // resizes out
void gemm(const MatrixView& a, bool transpose_a, const MatrixView& b, bool transpose_b, MatrixTarget out);  // out is (M, N)
void gemm_on(GemmKernel kernel, const MatrixView& a, bool transpose_a, const MatrixView& b, bool transpose_b,
             MatrixTarget out);

}  // namespace dtrain

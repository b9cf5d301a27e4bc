// gemm_peak.cpp: the best matrix-product speed this machine reaches on one
// core with exactly the products of one training iteration: the yardstick
// `make bench` holds unified_train against. One process, no MPI.
//   build/gemm_peak [--batch 60] [--seconds 1] [--json]
//
// One iteration of the 784-256-10 MLP on a batch of B rows multiplies
//   forward:   X (B, 784) * W1 (784, 256),   H (B, 256) * W2 (256, 10)
//   backward:  X^T * G1 (B, 256),  H^T * G2 (B, 10),  G2 * W2^T (FC1 needs no grad_x)
// i.e. 2*B*(784*256 + 256*10) flops forward and as many again, plus
// 2*B*256*10, backward: 49.1 GFLOP per epoch of 60,000 rows.
//
// Candidates: each of the kit's GEMM kernels this CPU can run (gemm.h), and
// a system CBLAS if one is installed (OpenBLAS, BLIS or the reference BLAS,
// loaded at run time, one thread). The peak is the fastest of them.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cli.h"
#include "gemm.h"
#include "layers.h"
#include "random.h"
#include "tensor.h"

namespace {

using dtrain::Matrix;

// cblas_dgemm, row-major. The enum values are CBLAS's (cblas.h), so the kit
// needs no BLAS headers to build.
using CblasDgemm = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, double alpha,
                            const double* a, int lda, const double* b, int ldb, double beta, double* c, int ldc);
constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112;

struct Cblas {
  std::string library;
  CblasDgemm dgemm = nullptr;
};

Cblas find_cblas() {
  setenv("OPENBLAS_NUM_THREADS", "1", 0);  // one core, like the kit's kernels
  setenv("BLIS_NUM_THREADS", "1", 0);
  for (const char* name : {"libopenblas.so.0", "libblis.so.4", "libblas.so.3"}) {
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) continue;
    if (void* symbol = dlsym(handle, "cblas_dgemm")) return {name, reinterpret_cast<CblasDgemm>(symbol)};
    dlclose(handle);
  }
  return {};
}

// out = op(a) * op(b) through a CBLAS, all row-major.
void cblas_gemm(CblasDgemm dgemm, const Matrix& a, bool ta, const Matrix& b, bool tb, Matrix& out) {
  const int m = static_cast<int>(ta ? a.cols() : a.rows()), k = static_cast<int>(ta ? a.rows() : a.cols());
  const int n = static_cast<int>(tb ? b.rows() : b.cols());
  dgemm(kCblasRowMajor, ta ? kCblasTrans : kCblasNoTrans, tb ? kCblasTrans : kCblasNoTrans, m, n, k, 1.0, a.data(),
        static_cast<int>(a.cols()), b.data(), static_cast<int>(b.cols()), 0.0, out.data(), n);
}

using Gemm = std::function<void(const Matrix&, bool, const Matrix&, bool, Matrix&)>;

struct Products {
  Matrix x, w1, h, w2, g1, g2;          // inputs: (B, Din) (Din, H) (B, H) (H, Dout) (B, H) (B, Dout)
  Matrix out1, out2, gw1, gw2, gh;      // results: (B, H) (B, Dout) (Din, H) (H, Dout) (B, H)

  explicit Products(int batch) {
    dtrain::Rng rng(7);
    const int din = dtrain::kFeatures, hidden = dtrain::kHidden, dout = dtrain::kClasses;
    x = rng.normal_matrix(batch, din, 1.0);
    w1 = rng.normal_matrix(din, hidden, 0.05);
    h = rng.normal_matrix(batch, hidden, 1.0);
    w2 = rng.normal_matrix(hidden, dout, 0.05);
    g1 = rng.normal_matrix(batch, hidden, 1.0);
    g2 = rng.normal_matrix(batch, dout, 1.0);
    out1.resize(batch, hidden);
    out2.resize(batch, dout);
    gw1.resize(din, hidden);
    gw2.resize(hidden, dout);
    gh.resize(batch, hidden);
  }

  void iteration(const Gemm& gemm) {
    gemm(x, false, w1, false, out1);
    gemm(h, false, w2, false, out2);
    gemm(x, true, g1, false, gw1);
    gemm(h, true, g2, false, gw2);
    gemm(g2, false, w2, true, gh);
  }

  static double flops(int batch) {
    const double din = dtrain::kFeatures, hidden = dtrain::kHidden, dout = dtrain::kClasses;
    return 2.0 * batch * (din * hidden + hidden * dout) * 2.0 + 2.0 * batch * hidden * dout;
  }
};

double measure(const Gemm& gemm, int batch, double seconds) {
  Products p(batch);
  for (int i = 0; i < 50; ++i) p.iteration(gemm);  // warm caches and the allocator
  using Clock = std::chrono::steady_clock;
  long iterations = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 100; ++i) p.iteration(gemm);
    iterations += 100;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return Products::flops(batch) * static_cast<double>(iterations) / elapsed / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  dtrain::Flags flags("gemm_peak", "The fastest matrix products of one training iteration on one core.");
  const int& batch = flags.add_int("--batch", dtrain::facts::kGlobalBatch, "rows per batch (the trainers' default global batch)");
  const double& seconds = flags.add_double("--seconds", 1.0, "how long to measure each candidate");
  const bool& json = flags.add_switch("--json", "print one JSON line instead of text");
  if (const int status = flags.parse(argc, argv, 0); status >= 0) return status;
  if (batch <= 0 || seconds <= 0) {
    std::fprintf(stderr, "gemm_peak: --batch and --seconds must be positive, got %d and %g\n", batch, seconds);
    return 2;
  }

  struct Result {
    std::string name;
    double gflops;
  };
  std::vector<Result> results;
  for (auto kernel : {dtrain::GemmKernel::generic, dtrain::GemmKernel::avx2, dtrain::GemmKernel::avx512}) {
    if (!dtrain::gemm_kernel_runs_here(kernel)) continue;
    const Gemm gemm = [kernel](const Matrix& a, bool ta, const Matrix& b, bool tb, Matrix& out) {
      out.resize(ta ? a.cols() : a.rows(), tb ? b.rows() : b.cols());  // a no-op after the first call
      dtrain::gemm_on(kernel, a, ta, b, tb, out);
    };
    results.push_back({std::string("eigen-") + dtrain::gemm_kernel_name(kernel), measure(gemm, batch, seconds)});
  }
  const Cblas cblas = find_cblas();
  if (cblas.dgemm != nullptr) {
    const Gemm gemm = [&cblas](const Matrix& a, bool ta, const Matrix& b, bool tb, Matrix& out) {
      cblas_gemm(cblas.dgemm, a, ta, b, tb, out);
    };
    results.push_back({"cblas " + cblas.library, measure(gemm, batch, seconds)});
  }
  const Result* best = &results.front();
  for (const Result& r : results)
    if (r.gflops > best->gflops) best = &r;
  const std::string layers = std::string("eigen-") + dtrain::gemm_kernel_name(dtrain::gemm_kernel());
  const double epoch_gflop = Products::flops(batch) * (60000.0 / batch) / 1e9;
  if (json) {
    std::printf("{\"gflops\": %.3f, \"best\": \"%s\", \"layers_kernel\": \"%s\", \"batch\": %d, "
                "\"epoch_gflop\": %.3f, \"candidates\": {",
                best->gflops, best->name.c_str(), layers.c_str(), batch, epoch_gflop);
    for (std::size_t i = 0; i < results.size(); ++i)
      std::printf("%s\"%s\": %.3f", i ? ", " : "", results[i].name.c_str(), results[i].gflops);
    std::printf("}}\n");
  } else {
    std::printf("the products of one iteration at batch %d, one core, on the kernels of %s:\n", batch,
                dtrain::gemm_kernels_here());
    for (const Result& r : results)
      std::printf("  %-28s %6.2f GFLOP/s%s%s\n", r.name.c_str(), r.gflops, &r == best ? "  (peak)" : "",
                  r.name == layers ? "  (the layers use it)" : "");
    if (cblas.dgemm == nullptr) std::printf("  (no system CBLAS found: OpenBLAS would be libopenblas.so.0)\n");
    std::printf("one epoch of 60000 rows is %.1f GFLOP: %.2f s at the peak\n", epoch_gflop,
                epoch_gflop / best->gflops);
  }
  return 0;
}

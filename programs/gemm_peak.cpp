// gemm_peak.cpp: the matrix-product speed Eigen reaches on this machine with
// exactly the products of one training iteration, the yardstick `make bench`
// holds unified_train against. One process, no MPI.
//   build/gemm_peak [--batch 60] [--seconds 2] [--json]
//
// One iteration of the 784-256-10 MLP on a batch of B rows multiplies
//   forward:   X (B, 784) * W1 (784, 256),   H (B, 256) * W2 (256, 10)
//   backward:  X^T * G1 (B, 256),  H^T * G2 (B, 10),  G2 * W2^T (FC1 needs no grad_x)
// i.e. 2*B*(784*256 + 256*10) flops forward and as many again, plus
// 2*B*256*10, backward: 49.1 GFLOP per epoch of 60,000 rows.
#include <chrono>
#include <cstdio>
#include <string>

#include "cli.h"
#include "layers.h"
#include "random.h"
#include "tensor.h"

namespace {

using dtrain::Matrix;

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

  void iteration() {
    out1.noalias() = x * w1;
    out2.noalias() = h * w2;
    gw1.noalias() = x.transpose() * g1;
    gw2.noalias() = h.transpose() * g2;
    gh.noalias() = g2 * w2.transpose();
  }

  static double flops(int batch) {
    const double din = dtrain::kFeatures, hidden = dtrain::kHidden, dout = dtrain::kClasses;
    return 2.0 * batch * (din * hidden + hidden * dout) * 2.0 + 2.0 * batch * hidden * dout;
  }
};

}  // namespace

int main(int argc, char** argv) {
  dtrain::Flags flags("gemm_peak", "Eigen's speed on the matrix products of one training iteration.");
  const int& batch = flags.add_int("--batch", 60, "rows per batch (the trainers' default global batch)");
  const double& seconds = flags.add_double("--seconds", 2.0, "how long to measure");
  const bool& json = flags.add_switch("--json", "print one JSON line instead of text");
  if (const int status = flags.parse(argc, argv, 0); status >= 0) return status;
  if (batch <= 0 || seconds <= 0) {
    std::fprintf(stderr, "gemm_peak: --batch and --seconds must be positive, got %d and %g\n", batch, seconds);
    return 2;
  }

  Products p(batch);
  for (int i = 0; i < 50; ++i) p.iteration();  // warm caches and the allocator
  using Clock = std::chrono::steady_clock;
  long iterations = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 100; ++i) p.iteration();
    iterations += 100;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  const double gflops = Products::flops(batch) * static_cast<double>(iterations) / elapsed / 1e9;
  const double epoch_gflop = Products::flops(batch) * (60000.0 / batch) / 1e9;
  if (json) {
    std::printf("{\"gflops\": %.3f, \"batch\": %d, \"iterations\": %ld, \"seconds\": %.3f, \"epoch_gflop\": %.3f}\n",
                gflops, batch, iterations, elapsed, epoch_gflop);
  } else {
    std::printf("Eigen, one core, the products of one iteration at batch %d: %.2f GFLOP/s\n", batch, gflops);
    std::printf("one epoch of 60000 rows is %.1f GFLOP: %.2f s at this speed\n", epoch_gflop, epoch_gflop / gflops);
  }
  return 0;
}

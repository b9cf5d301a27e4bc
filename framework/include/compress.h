// compress.h: Part 14 (an extension part): top-k compression of a gradient
// with error feedback, and the mean of every rank's sparse vector. Implemented
// in student/compression.cpp.
// Shapes: N = a vector's length, K = the entries kept (min(k, N), 0 for k <= 0),
// P = comm.size().
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "comm.h"
#include "tensor.h"

namespace dtrain {

// K entries of a length-N vector.
struct Sparse {
  std::vector<long> index;  // (K): ascending, distinct, each in [0, N)
  Vector value;             // (K): value[i] belongs at index[i]
  long n = 0;               // N
};

// The length-N vector holding s's entries, zeros elsewhere. An index out of
// [0, N), or index and value of different lengths, throws std::invalid_argument.
inline Vector dense(const Sparse& s) {
  if (static_cast<long>(s.index.size()) != static_cast<long>(s.value.size()))
    throw std::invalid_argument("dense: " + std::to_string(s.index.size()) + " indices but " +
                                std::to_string(s.value.size()) + " values");
  Vector out = Vector::Zero(s.n);  // (N)
  for (std::size_t i = 0; i < s.index.size(); ++i) {
    if (s.index[i] < 0 || s.index[i] >= s.n)
      throw std::invalid_argument("dense: index " + std::to_string(s.index[i]) + " outside [0, " +
                                  std::to_string(s.n) + ")");
    out(s.index[i]) = s.value(static_cast<Eigen::Index>(i));
  }
  return out;
}

// The entries a step did not send, carried into the next step: one per
// parameter vector, the residual starting at zero.
struct ErrorFeedback {
  explicit ErrorFeedback(long n) : residual(Vector::Zero(n)) {}
  Vector residual;  // (N)
};

// Exactly K = min(k, N) entries of v, those of largest magnitude (zeros
// included when fewer are non-zero); among equal magnitudes the lower index
// wins (-0.0 ties 0.0). k >= N: every entry; k <= 0: none. The result's n is
// N either way, its indices ascending.
Sparse topk(const Vector& v,  // (N)
            long k);

// p = grad + ef.residual; c = topk(p, k); ef.residual = p - dense(c); returns c.
// grad.size() != ef.residual.size() throws std::invalid_argument.
Sparse compress_with_feedback(ErrorFeedback& ef,   // residual (N), updated
                              const Vector& grad,  // (N)
                              long k);

// The mean over the ranks of their dense vectors, from each rank's sparse one
// (every rank holds the same K and N, its own indices). One allgather of the
// K indices, as doubles (exact below 2^53; source K elements, destination
// K * P), then one allgather of the K values, in that order, made even when
// K == 0. Add every rank's entries into a length-N vector (an index two
// ranks share adds up) and divide by P. No allreduce, no other collective,
// no point-to-point call.
Vector sparse_allreduce_mean(const Sparse& mine,  // K entries of N
                             Communicator& comm);  // -> (N)

}  // namespace dtrain

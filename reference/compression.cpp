// Part 14, the reference: top-k compression with error feedback.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "compress.h"

namespace dtrain {

Sparse topk(const Vector& v, long k) {  // (N)
  const long n = static_cast<long>(v.size());
  const long kept = std::clamp(k, 0L, n);
  std::vector<long> order(static_cast<std::size_t>(n));  // (N): every index, the kept ones first
  std::iota(order.begin(), order.end(), 0L);
  // fabs makes -0.0 and 0.0 equal; the lower index wins among equals.
  std::partial_sort(order.begin(), order.begin() + kept, order.end(), [&v](long a, long b) {
    const double ma = std::fabs(v(a)), mb = std::fabs(v(b));
    return ma != mb ? ma > mb : a < b;
  });
  Sparse out;
  out.n = n;
  out.index.assign(order.begin(), order.begin() + kept);
  std::sort(out.index.begin(), out.index.end());
  out.value.resize(kept);  // (K)
  for (long i = 0; i < kept; ++i) out.value(i) = v(out.index[static_cast<std::size_t>(i)]);
  return out;
}

Sparse compress_with_feedback(ErrorFeedback& ef, const Vector& grad, long k) {  // residual (N), (N)
  if (grad.size() != ef.residual.size())
    throw std::invalid_argument("compress_with_feedback: grad has " + std::to_string(grad.size()) +
                                " elements, the residual " + std::to_string(ef.residual.size()));
  const Vector p = grad + ef.residual;  // (N)
  Sparse c = topk(p, k);
  ef.residual = p - dense(c);
  return c;
}

Vector sparse_allreduce_mean(const Sparse& mine, Communicator& comm) {  // K of N -> (N)
  const Eigen::Index k = mine.value.size();
  Vector index(k);  // (K): this rank's indices, as doubles
  for (Eigen::Index i = 0; i < k; ++i) index(i) = static_cast<double>(mine.index[static_cast<std::size_t>(i)]);
  Vector all_index(k * comm.size()), all_value(k * comm.size());  // (K * P) each, rank by rank
  comm.allgather(index, all_index);
  comm.allgather(mine.value, all_value);
  Vector sum = Vector::Zero(mine.n);  // (N)
  for (Eigen::Index i = 0; i < all_index.size(); ++i) sum(static_cast<Eigen::Index>(all_index(i))) += all_value(i);
  return sum / comm.size();
}

}  // namespace dtrain

// Part 16, the reference: ZeRO stages 1 and 2 for Adam.
#include <cmath>
#include <stdexcept>
#include <string>

#include "zero12.h"

namespace dtrain {

namespace {

void check_lengths(const char* function, long n, const Vector& params, const Vector& grad) {
  if (params.size() != n || grad.size() != n)
    throw std::invalid_argument(std::string(function) + ": params has " + std::to_string(params.size()) +
                                " elements and grad " + std::to_string(grad.size()) + ", where the optimizer's n is " +
                                std::to_string(n));
}

// One Adam step on this rank's shard: `g` is the shard's averaged gradient
// (S, zero past N); m and v are made at the first step. Returns the
// updated shard of params (S, zero past N).
Vector adam_shard(ShardedAdam& a, const Vector& params, const Vector& g, const ShardLayout& l) {
  const long first = a.comm.rank() * l.shard;
  if (a.m.size() == 0) a.m = a.v = Vector::Zero(l.shard);
  a.m = a.beta1 * a.m + (1 - a.beta1) * g;
  a.v = a.beta2 * a.v + (1 - a.beta2) * g.cwiseProduct(g);
  const double c1 = 1 - std::pow(a.beta1, a.step_idx), c2 = 1 - std::pow(a.beta2, a.step_idx);
  const Vector m_hat = a.m / c1, v_hat = a.v / c2;  // (S) each: the bias-corrected moments
  Vector shard = Vector::Zero(l.shard);             // (S)
  for (long i = 0; i < l.shard && first + i < l.n; ++i)
    shard(i) = params(first + i) - a.lr * m_hat(i) / (std::sqrt(v_hat(i)) + a.eps);
  return shard;
}

// The shards, gathered into params (N), the padding dropped.
void gather_params(Communicator& comm, const Vector& shard, Vector& params, const ShardLayout& l) {
  Vector all(l.padded);  // (N_pad)
  comm.allgather(shard, all);
  params = all.head(l.n);
}

}  // namespace

void Zero1Adam::step(Vector& params, const Vector& grad) {  // (N), (N)
  check_lengths("Zero1Adam::step", n, params, grad);
  ++step_idx;
  const ShardLayout l = shard_layout(n, comm.size());
  Vector sum(n);  // (N): the whole gradient, summed over the ranks
  comm.allreduce(grad, sum);
  Vector g = Vector::Zero(l.shard);  // (S): this rank's part of the mean
  const long first = comm.rank() * l.shard;
  for (long i = 0; i < l.shard && first + i < n; ++i) g(i) = sum(first + i) / comm.size();
  gather_params(comm, adam_shard(*this, params, g, l), params, l);
}

void Zero2Adam::step(Vector& params, const Vector& grad) {  // (N), (N)
  check_lengths("Zero2Adam::step", n, params, grad);
  ++step_idx;
  const ShardLayout l = shard_layout(n, comm.size());
  Vector padded = Vector::Zero(l.padded);  // (N_pad)
  padded.head(n) = grad;
  Vector g(l.shard);  // (S): this rank's shard of the sum
  comm.reduce_scatter(padded, g);
  g /= comm.size();
  gather_params(comm, adam_shard(*this, params, g, l), params, l);
}

}  // namespace dtrain

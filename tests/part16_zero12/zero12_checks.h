// zero12_checks.h: the checks of Part 16's cases, public and hidden. After
// each step, params against the check's own plain Adam (Part 9's formula)
// on the ranks' averaged gradient, which the check computes from every
// rank's gradient; the step's calls by the ledger (stage 1: allreduce of N,
// allgather of S; stage 2: reduce_scatter to S, allgather of S); and what
// the optimizer keeps: step_idx, and m and v of S elements each, this
// rank's shard of the plain Adam's moments, read directly from the
// optimizer (no memory figure judges it: docs/extension-parts.md says why).
// Rank q's gradient holds q: the averaged values say whose were summed.
#pragma once

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_runtime.h"
#include "kit_facts.h"
#include "kit_test.h"
#include "sent_digest.h"
#include "zero12_calls.h"

namespace kit {

// Element i of the params every rank starts from, and of rank q's own gradient at a step.
inline double zero12_start_at(long i) { return 0.5 - 0.001 * static_cast<double>(i % 977); }
inline double zero12_gradient_at(int q, int step, long i) {
  return 0.01 * (q + 1) * std::sin(0.3 * static_cast<double>(i) + step) + 0.002 * q;
}

inline Vector zero12_start(long n) {  // (N)
  Vector p(n);
  for (long i = 0; i < n; ++i) p(i) = zero12_start_at(i);
  return p;
}

inline Vector zero12_gradient(int q, int step, long n) {  // (N)
  Vector g(n);
  for (long i = 0; i < n; ++i) g(i) = zero12_gradient_at(q, step, i);
  return g;
}

// Part 9's Adam on whole vectors, the check's own.
struct PlainAdam {
  explicit PlainAdam(double rate) : lr(rate) {}
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  int t = 0;
  Vector m, v;  // (N)
  void step(Vector& params, const Vector& g) {
    ++t;
    if (m.size() == 0) m = v = Vector::Zero(g.size());
    m = beta1 * m + (1 - beta1) * g;
    v = beta2 * v + (1 - beta2) * g.cwiseProduct(g);
    const double c1 = 1 - std::pow(beta1, t), c2 = 1 - std::pow(beta2, t);
    for (Eigen::Index i = 0; i < params.size(); ++i)
      params(i) -= lr * (m(i) / c1) / (std::sqrt(v(i) / c2) + eps);
  }
};

// Rank r's shard of a whole vector in the padded layout (S, zero past N).
inline Vector shard_of(const Vector& whole, int r, const dtrain::ShardLayout& l) {
  Vector s = Vector::Zero(l.shard);
  for (long i = 0; i < l.shard && r * l.shard + i < l.n; ++i) s(i) = whole(r * l.shard + i);
  return s;
}

inline std::string calls_said(const std::vector<std::pair<std::string, long>>& calls) {
  std::ostringstream out;
  for (std::size_t i = 0; i < calls.size(); ++i) out << (i ? "; " : "") << calls[i].first << " of " << calls[i].second << " elements";
  return calls.empty() ? "none" : out.str();
}

// What one step sent: this rank's own gradient (its first element and sum)
// and its updated shard of params (the same, and the shard's size in sum of
// magnitudes, for the rounding allowed).
struct StepSent {
  double grad_first, grad_sum, shard_first, shard_sum, shard_magnitude;
};

// A step's calls: their kinds and sizes (stage 1: allreduce of N, allgather
// of S; stage 2: reduce_scatter to S, allgather of S), then what each
// carried (the call log's first element and sum, sent_digest.h): the first
// sends this rank's own gradient (stage 2: padded with zeros) as given; the
// allgather sends this rank's updated shard of params (zeros past N), to
// within rounding. NaN: the content was not seen (one rank: the side
// carries no values).
inline void expect_zero12_calls(const std::vector<dtrain::ledger::LoggedCall>& calls, int stage, long n, long shard,
                                const StepSent& sent, const std::string& where) {
  using Calls = std::vector<std::pair<std::string, long>>;
  const Calls want = stage == 1 ? Calls{{"allreduce", n}, {"allgather", shard}}
                                : Calls{{"reduce_scatter", shard}, {"allgather", shard}};
  Calls got;
  for (const auto& c : calls) got.emplace_back(dtrain::facts::kOpNames[c.op], c.count);
  if (got != want) {
    ADD_FAILURE() << where << ": its calls were " << calls_said(got) << ", where stage " << stage << " makes "
                  << calls_said(want)
                  << (stage == 1 ? " (the whole gradient averaged, then the shards gathered)"
                                 : " (the padded gradient reduce-scattered to this rank's shard, then the shards gathered)");
    return;
  }
  const dtrain::ledger::LoggedCall& reduce = calls[0];
  const dtrain::ledger::LoggedCall& gather = calls[1];
  if (!std::isnan(reduce.first) && (reduce.first != sent.grad_first || reduce.sum != sent.grad_sum))
    ADD_FAILURE() << where << ": call 1 sent a buffer whose first element is " << reduce.first << " and whose sum is "
                  << reduce.sum << ", where this rank's gradient starts at " << sent.grad_first << " and sums to "
                  << sent.grad_sum;
  const double tolerance = 1e-9 * (sent.shard_magnitude + 1e-300);
  if (!std::isnan(gather.first) &&
      (std::fabs(gather.first - sent.shard_first) > tolerance || std::fabs(gather.sum - sent.shard_sum) > tolerance))
    ADD_FAILURE() << where << ": call 2 (the allgather) sent a buffer whose first element is " << gather.first
                  << " and whose sum is " << gather.sum << ", where this rank's updated shard of params (zeros past N) "
                  << "starts at " << sent.shard_first << " and sums to " << sent.shard_sum;
}

// The calls a student call made, as the call log saw them.
inline std::vector<dtrain::ledger::LoggedCall> calls_of(dtrain::ledger::CallLog& log) {
  std::vector<dtrain::ledger::LoggedCall> calls;
  for (const auto& c : log.take())
    if (c.event == dtrain::ledger::LoggedCall::Event::Call) calls.push_back(c);
  return calls;
}

// s steps of stage `stage` (1 or 2) on a vector of n, at learning rate lr.
template <class Adam>
void check_zero12(int stage, int steps, long n, double lr = 1e-2) {
  Communicator& comm = world();
  const int p = comm.size(), r = comm.rank();
  const dtrain::ShardLayout l = dtrain::shard_layout(n, p);
  const std::string type = stage == 1 ? "Zero1Adam" : "Zero2Adam";
  dtrain::student::StudentAdam<Adam> optimizer(type.c_str(), n, comm, lr);
  Vector params = zero12_start(n), expected = params;  // (N) each
  PlainAdam plain(lr);
  for (int step = 1; step <= steps; ++step) {
    std::ostringstream where;
    where << type << "::step, step " << step << " on rank " << r << " of " << p << " (N = " << n << ", S = " << l.shard
          << ")";
    Vector mean = Vector::Zero(n);  // (N): the ranks' averaged gradient
    for (int q = 0; q < p; ++q) mean += zero12_gradient(q, step, n);
    mean /= p;
    plain.step(expected, mean);
    dtrain::ledger::CallLog log;
    const Vector grad = zero12_gradient(r, step, n);
    optimizer.step(params, grad);
    const Vector shard = shard_of(expected, r, l);  // (S): this rank's updated shard, as the allgather sends it
    expect_zero12_calls(calls_of(log), stage, n, l.shard,
                        {grad(0), dtrain::comm_detail::digest_of(grad.data(), n).sum, shard(0),
                         dtrain::comm_detail::digest_of(shard.data(), l.shard).sum, shard.cwiseAbs().sum()},
                        where.str());
    ASSERT_EQ(params.size(), n) << where.str() << ": params has " << params.size() << " elements after the step";
    EXPECT_VECTOR_NEAR(params, expected) << where.str() << ": params against Adam on the ranks' averaged gradient";
    const dtrain::student::Zero12State kept = optimizer.state();
    EXPECT_EQ(kept.step_idx, step) << where.str() << ": step_idx is " << kept.step_idx << " after the step";
    if (kept.m.size() != l.shard || kept.v.size() != l.shard) {
      ADD_FAILURE() << where.str() << ": the optimizer keeps m of " << kept.m.size() << " and v of " << kept.v.size()
                    << " elements, where it keeps this rank's shard of each: " << l.shard
                    << " (stage " << stage << " shards the optimizer's state)";
      continue;
    }
    EXPECT_VECTOR_NEAR(kept.m, shard_of(plain.m, r, l)) << where.str() << ": m, this rank's shard of Adam's";
    EXPECT_VECTOR_NEAR(kept.v, shard_of(plain.v, r, l)) << where.str() << ": v, this rank's shard of Adam's";
  }
}

// One step of stage `stage` on a larger model, with little memory of the
// harness's own (it keeps a small part of the rank's, kit/limits.py: a case
// of 150,000 elements already ran out of it beside other parts' cases):
// params are checked element by element against Adam's first step,
// m = (1-beta1) g and v = (1-beta2) g^2 on the averaged gradient, without
// whole vectors of the check's own.
template <class Adam>
void check_zero12_large(int stage, long n, double lr = 1e-2) {
  Communicator& comm = world();
  const int p = comm.size(), r = comm.rank();
  const std::string type = stage == 1 ? "Zero1Adam" : "Zero2Adam";
  dtrain::student::StudentAdam<Adam> optimizer(type.c_str(), n, comm, lr);
  Vector params = zero12_start(n);  // (N)
  const dtrain::ShardLayout l = dtrain::shard_layout(n, p);
  StepSent sent{};
  std::vector<dtrain::ledger::LoggedCall> calls;
  {
    const Vector grad = zero12_gradient(r, 1, n);  // (N), freed before the check's own loop
    sent.grad_first = grad(0), sent.grad_sum = dtrain::comm_detail::digest_of(grad.data(), n).sum;
    dtrain::ledger::CallLog log;
    optimizer.step(params, grad);
    calls = calls_of(log);
  }
  ASSERT_EQ(params.size(), n) << type << "::step on rank " << r << " of " << p << ": params has " << params.size()
                              << " elements after the step";
  const PlainAdam hyper(lr);
  const double c1 = 1 - hyper.beta1, c2 = 1 - hyper.beta2;
  double largest = 0, worst = 0;
  long at = -1;
  for (long i = 0; i < n; ++i) {
    double mean = 0;
    for (int q = 0; q < p; ++q) mean += zero12_gradient_at(q, 1, i);
    mean /= p;
    const double m = (1 - hyper.beta1) * mean, v = (1 - hyper.beta2) * mean * mean;
    const double want = zero12_start_at(i) - lr * (m / c1) / (std::sqrt(v / c2) + hyper.eps);
    largest = std::max(largest, std::fabs(want));
    if (std::fabs(params(i) - want) > worst) worst = std::fabs(params(i) - want), at = i;
    if (i == r * l.shard) sent.shard_first = want;
    if (i >= r * l.shard && i < (r + 1) * l.shard) sent.shard_sum += want, sent.shard_magnitude += std::fabs(want);
  }
  std::ostringstream where;
  where << type << "::step on rank " << r << " of " << p << " (N = " << n << ", S = " << l.shard << ")";
  expect_zero12_calls(calls, stage, n, l.shard, sent, where.str());
  EXPECT_LE(worst, 1e-12 * largest) << type << "::step on rank " << r << " of " << p << " (N = " << n
                                    << "): params[" << at << "] is off by " << worst
                                    << " from Adam's first step on the ranks' averaged gradient";
  const dtrain::student::Zero12State kept = optimizer.state();
  const long shard = l.shard;
  if (kept.m.size() != shard || kept.v.size() != shard)
    ADD_FAILURE() << type << "::step on rank " << r << " of " << p << ": the optimizer keeps m of " << kept.m.size() << " and v of "
      << kept.v.size() << " elements, where it keeps this rank's shard of each: " << shard;
}

template <class Adam>
void check_zero12_refuses_another_length(int stage) {
  const std::string what = std::string(stage == 1 ? "Zero1Adam" : "Zero2Adam") +
                           "::step of an optimizer of 8 elements, given params of 7";
  dtrain::student::StudentAdam<Adam> optimizer(stage == 1 ? "Zero1Adam" : "Zero2Adam", 8, world(), 1e-2);
  Vector params = zero12_start(7);
  try {
    optimizer.step(params, zero12_gradient(world().rank(), 1, 7));
    ADD_FAILURE() << what << " returned, where it throws std::invalid_argument";
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " threw another exception (" << e.what() << "), where it throws std::invalid_argument";
  }
}

}  // namespace kit

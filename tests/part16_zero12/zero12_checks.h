// zero12_checks.h: the checks of Part 16's cases, public and hidden. After
// each step, params against the check's own plain Adam (Part 9's formula)
// on the ranks' averaged gradient, which the check computes from every
// rank's gradient; the step's calls by the ledger (stage 1: allreduce of N,
// allgather of S; stage 2: reduce_scatter to S, allgather of S); and what
// the optimizer keeps: step_idx, and m and v of S elements each, this
// rank's shard of the plain Adam's moments (the shard-only state is read
// directly). The memory the student's process holds at each step's return
// is the side's to read (kit/rules/part16_zero12.py).
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
  const std::vector<std::pair<std::string, long>> want =
      stage == 1 ? std::vector<std::pair<std::string, long>>{{"allreduce", n}, {"allgather", l.shard}}
                 : std::vector<std::pair<std::string, long>>{{"reduce_scatter", l.shard}, {"allgather", l.shard}};
  for (int step = 1; step <= steps; ++step) {
    std::ostringstream where;
    where << type << "::step, step " << step << " on rank " << r << " of " << p << " (N = " << n << ", S = " << l.shard
          << ")";
    Vector mean = Vector::Zero(n);  // (N): the ranks' averaged gradient
    for (int q = 0; q < p; ++q) mean += zero12_gradient(q, step, n);
    mean /= p;
    plain.step(expected, mean);
    dtrain::ledger::CallLog log;
    optimizer.step(params, zero12_gradient(r, step, n));
    std::vector<std::pair<std::string, long>> got;
    for (const auto& c : log.take())
      if (c.event == dtrain::ledger::LoggedCall::Event::Call) got.emplace_back(dtrain::facts::kOpNames[c.op], c.count);
    if (got != want)
      ADD_FAILURE() << where.str() << ": its calls were " << calls_said(got) << ", where stage " << stage
                             << " makes " << calls_said(want)
                             << (stage == 1 ? " (the whole gradient averaged, then the shards gathered)"
                                            : " (the padded gradient reduce-scattered to this rank's shard, then the "
                                              "shards gathered)");
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
// harness's own (it keeps a small part of the rank's, kit/parts.py: a case
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
  optimizer.step(params, zero12_gradient(r, 1, n));
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
  }
  EXPECT_LE(worst, 1e-12 * largest) << type << "::step on rank " << r << " of " << p << " (N = " << n
                                    << "): params[" << at << "] is off by " << worst
                                    << " from Adam's first step on the ranks' averaged gradient";
  const dtrain::student::Zero12State kept = optimizer.state();
  const long shard = dtrain::shard_layout(n, p).shard;
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

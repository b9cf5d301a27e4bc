// decentral_checks.h: the checks of Part 15's cases, public and hidden: each
// rank's vector after s steps against row r of W^s X (W the ring's mixing
// matrix, X's row q rank q's first vector), and each step's messages by the
// ledger: sendrecv only, to and from the neighbours, with the handout's tags
// and order, and the elements each sends.
// Rank q's vector holds 100 (q+1) + i: the values say whose were averaged.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "comm_runtime.h"
#include "decentral_calls.h"
#include "kit_facts.h"
#include "kit_test.h"

namespace kit {

inline Vector ring_start(int q, Eigen::Index n) {  // (N): rank q's first vector
  Vector v(n);
  for (Eigen::Index i = 0; i < n; ++i) v(i) = 100.0 * (q + 1) + static_cast<double>(i);
  return v;
}

inline Vector ring_gradient(int q, int step, Eigen::Index n) {  // (N): rank q's gradient at a step
  Vector g(n);
  for (Eigen::Index i = 0; i < n; ++i) g(i) = 0.5 * (q + 1) - 0.25 * static_cast<double>(i) + step;
  return g;
}

// The ring's mixing matrix (P, P): row r averages r and its neighbours.
inline Matrix ring_mixing(int p) {
  Matrix w = Matrix::Zero(p, p);
  for (int r = 0; r < p; ++r) {
    if (p == 1) {
      w(r, r) = 1.0;
    } else if (p == 2) {
      w(r, 0) = w(r, 1) = 0.5;
    } else {
      w(r, r) = w(r, (r + p - 1) % p) = w(r, (r + 1) % p) = 1.0 / 3.0;
    }
  }
  return w;
}

// Row r of X_s, where X_0's row q is ring_start(q) and X_{t+1} = W X_t - lr G_t
// (G_t's row q is ring_gradient(q, t); lr = 0: s gossip steps, W^s X_0).
inline Vector ring_expected(int steps, int r, int p, Eigen::Index n, double lr = 0.0) {
  Matrix x(p, n);  // (P, N)
  for (int q = 0; q < p; ++q) {
    const Vector start = ring_start(q, n);
    for (Eigen::Index i = 0; i < n; ++i) x(q, i) = start(i);
  }
  const Matrix w = ring_mixing(p);  // (P, P)
  for (int t = 0; t < steps; ++t) {
    Matrix g(p, n);  // (P, N)
    for (int q = 0; q < p; ++q) {
      const Vector grad = ring_gradient(q, t, n);
      for (Eigen::Index i = 0; i < n; ++i) g(q, i) = grad(i);
    }
    x = (w * x - lr * g).eval();
  }
  Vector row(n);  // (N)
  for (Eigen::Index i = 0; i < n; ++i) row(i) = x(r, i);
  return row;
}

// One point-to-point call as the handout states it, or as the ledger saw it.
struct Exchange {
  std::string op;
  int to, send_tag, from, recv_tag;
  long elements;  // what it sends
};

inline std::string said(const Exchange& e) {
  std::ostringstream out;
  out << e.op;
  if (e.to >= 0) out << " to rank " << e.to << " (tag " << e.send_tag << ")";
  if (e.from >= 0) out << " from rank " << e.from << " (tag " << e.recv_tag << ")";
  out << ", " << e.elements << " elements";
  return out.str();
}

// One gossip step's calls on rank r of p, vectors of n elements (decentral.h).
inline std::vector<Exchange> gossip_step(int p, int r, long n) {
  if (p == 1) return {};
  const int left = (r - 1 + p) % p, right = (r + 1) % p;
  if (p == 2) return {{"sendrecv", right, 0, left, 0, n}};
  return {{"sendrecv", right, 0, left, 0, n}, {"sendrecv", left, 1, right, 1, n}};
}

// The step's calls, each as the handout's, in order; a failure names the
// call, what it was and what the handout's is.
inline void expect_gossip_calls(const std::vector<dtrain::ledger::LoggedCall>& log, int p, int r, long n,
                                const std::string& function, int step) {
  std::vector<Exchange> got;
  for (const auto& call : log) {
    if (call.event != dtrain::ledger::LoggedCall::Event::Call) continue;
    const std::string op = dtrain::facts::kOpNames[call.op];
    EXPECT_EQ(op, "sendrecv") << function << ", step " << step << ": called " << op
                              << "; Part 15 talks to its neighbours with sendrecv alone";
    got.push_back({op, call.dest, call.send_tag, call.source, call.recv_tag, call.count});
  }
  const std::vector<Exchange> want = gossip_step(p, r, n);
  EXPECT_EQ(got.size(), want.size()) << function << ", step " << step << ": " << got.size()
                                     << " point-to-point calls on rank " << r << " of " << p << ", where a step makes "
                                     << want.size();
  for (std::size_t k = 0; k < got.size() && k < want.size(); ++k) {
    const Exchange& g = got[k];
    const Exchange& w = want[k];
    const bool same = g.op == w.op && g.to == w.to && g.send_tag == w.send_tag && g.from == w.from &&
                      g.recv_tag == w.recv_tag && g.elements == w.elements;
    EXPECT_TRUE(same) << function << ", step " << step << ", call " << k + 1 << " on rank " << r << " of " << p
                      << ": " << said(g) << ", where the handout's is " << said(w);
  }
}

// s gossip steps of a vector of n elements on every rank of the world.
inline void check_gossip(int steps, Eigen::Index n) {
  Communicator& comm = world();
  const int p = comm.size(), r = comm.rank();
  Vector x = ring_start(r, n);
  for (int step = 1; step <= steps; ++step) {
    dtrain::ledger::CallLog log;
    dtrain::student::gossip_mix(x, comm);
    expect_gossip_calls(log.take(), p, r, static_cast<long>(n), "gossip_mix", step);
  }
  EXPECT_VECTOR_NEAR(x, ring_expected(steps, r, p, n)) << "after " << steps << " gossip steps on " << p << " ranks";
}

// s decentralized SGD steps, at learning rate lr.
inline void check_sgd(int steps, Eigen::Index n, double lr) {
  Communicator& comm = world();
  const int p = comm.size(), r = comm.rank();
  Vector w = ring_start(r, n);
  for (int step = 0; step < steps; ++step) {
    dtrain::ledger::CallLog log;
    dtrain::student::decentralized_sgd_step(w, ring_gradient(r, step, n), lr, comm);
    expect_gossip_calls(log.take(), p, r, static_cast<long>(n), "decentralized_sgd_step", step + 1);
  }
  EXPECT_VECTOR_NEAR(w, ring_expected(steps, r, p, n, lr))
      << "after " << steps << " decentralized SGD steps on " << p << " ranks: w <- mix(w) - lr * grad";
}

}  // namespace kit

// compress_checks.h: the checks of Part 14's cases, public and hidden.
// topk and compress_with_feedback are checked exactly against the check's
// own selection (K rounds, each taking the largest magnitude left, the
// lower index first); sparse_allreduce_mean against the mean of every
// rank's dense vector, and its calls by the ledger: two allgathers of K
// elements, the indices' first (told apart by what each carried: its first
// element and the sum of its elements, which the call log keeps; the cases'
// values are never whole numbers, indices always are).
// Rank q's data holds q: the values say whose entries were added.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm_runtime.h"
#include "compress_calls.h"
#include "sent_digest.h"
#include "kit_facts.h"
#include "kit_test.h"

namespace kit {

// The indices top-k keeps of v (ascending), chosen one at a time.
inline std::vector<long> topk_indices(const Vector& v, long k) {
  const long n = static_cast<long>(v.size());
  std::vector<bool> taken(static_cast<std::size_t>(n), false);
  std::vector<long> out;
  for (long round = 0; round < std::min(k, n); ++round) {
    long best = -1;
    for (long i = 0; i < n; ++i)
      if (!taken[static_cast<std::size_t>(i)] && (best < 0 || std::fabs(v(i)) > std::fabs(v(best)))) best = i;
    taken[static_cast<std::size_t>(best)] = true;
  }
  for (long i = 0; i < n; ++i)
    if (taken[static_cast<std::size_t>(i)]) out.push_back(i);
  return out;
}

inline dtrain::Sparse topk_expected(const Vector& v, long k) {
  dtrain::Sparse s;
  s.n = static_cast<long>(v.size());
  s.index = topk_indices(v, k);
  s.value.resize(static_cast<Eigen::Index>(s.index.size()));
  for (std::size_t i = 0; i < s.index.size(); ++i) s.value(static_cast<Eigen::Index>(i)) = v(s.index[i]);
  return s;
}

inline std::string list(const std::vector<long>& v) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < v.size() && i < 12; ++i) out << (i ? ", " : "") << v[i];
  if (v.size() > 12) out << ", ... (" << v.size() << ")";
  out << "]";
  return out.str();
}

// got against want, exactly: the length, each index and each value; a
// failure names the first that differs.
inline void expect_sparse(const dtrain::Sparse& got, const dtrain::Sparse& want, const std::string& what) {
  EXPECT_EQ(got.n, want.n) << what << ": n is " << got.n << ", where the vector's length is " << want.n;
  EXPECT_EQ(got.index.size(), static_cast<std::size_t>(got.value.size()))
      << what << ": " << got.index.size() << " indices but " << got.value.size() << " values";
  if (got.index != want.index) {
    std::size_t at = 0;
    while (at < got.index.size() && at < want.index.size() && got.index[at] == want.index[at]) ++at;
    ADD_FAILURE() << what << ": the indices are " << list(got.index) << ", where the top-" << want.index.size()
                  << "'s are " << list(want.index) << " (the first difference at position " << at
                  << "; the larger magnitude first, the lower index among equals, indices ascending)";
    return;
  }
  for (Eigen::Index i = 0; i < want.value.size() && i < got.value.size(); ++i)
    EXPECT_EQ(got.value(i), want.value(i)) << what << ": the value at index " << want.index[static_cast<std::size_t>(i)]
                                           << " is " << got.value(i) << ", where the vector holds " << want.value(i);
}

// --- topk ---

// Values -3..3 in a pattern that differs by rank: many equal magnitudes.
inline Vector tied(int r, Eigen::Index n) {
  Vector v(n);
  for (Eigen::Index i = 0; i < n; ++i) v(i) = static_cast<double>((i * 5 + r) % 7) - 3.0;
  return v;
}

// Two non-zero entries (which say the rank), -0.0 first, 0.0 elsewhere.
inline Vector mostly_zero(int r, Eigen::Index n) {
  Vector v = Vector::Zero(n);
  v(0) = -0.0;
  v(n / 3) = r + 1.0;
  v(n - 2) = -(r + 2.0);
  return v;
}

// A length's worth of entries of some magnitudes repeated and of both signs.
inline Vector spread(int r, Eigen::Index n) {
  Vector v(n);
  for (Eigen::Index i = 0; i < n; ++i) v(i) = ((i * 37 + 11 * r) % 23 - 11) * 0.25 * ((i % 2) ? 1 : -1);
  return v;
}

inline void check_topk(const Vector& v, long k, const std::string& vector_name) {
  const int r = world().rank();
  const dtrain::Sparse got = dtrain::student::topk(v, k);
  std::ostringstream what;
  what << "topk of " << vector_name << " (" << v.size() << " elements, rank " << r << "), k = " << k;
  expect_sparse(got, topk_expected(v, k), what.str());
}

// --- compress_with_feedback ---

inline Vector feedback_gradient(int r, int step, Eigen::Index n) {  // (N): rank r's gradient at a step
  Vector g(n);
  for (Eigen::Index i = 0; i < n; ++i) g(i) = std::sin(0.7 * static_cast<double>(i) + step) * (r + 1) + 0.01 * step;
  return g;
}

// s steps of error feedback on one rank's gradients; each step's result and
// residual exactly as the handout's formula gives them.
inline void check_feedback(int steps, Eigen::Index n, long k) {
  const int r = world().rank();
  dtrain::ErrorFeedback ef(static_cast<long>(n));
  Vector residual = Vector::Zero(n);  // (N): the formula's
  for (int step = 1; step <= steps; ++step) {
    const Vector grad = feedback_gradient(r, step, n);
    const Vector p = grad + residual;
    const dtrain::Sparse want = topk_expected(p, k);
    residual = p - dtrain::dense(want);
    std::ostringstream what;
    what << "compress_with_feedback, step " << step << " (" << n << " elements, k = " << k << ", rank " << r << ")";
    const dtrain::Sparse got = dtrain::student::compress_with_feedback(ef, grad, k);
    expect_sparse(got, want, what.str() + ", its result");
    for (Eigen::Index i = 0; i < n && i < ef.residual.size(); ++i)
      if (ef.residual(i) != residual(i)) {
        ADD_FAILURE() << what.str() << ": the residual at " << i << " is " << ef.residual(i) << ", where p - dense(c) is "
                      << residual(i) << " (p = grad + the residual before the step)";
        return;
      }
    EXPECT_EQ(ef.residual.size(), n) << what.str() << ": the residual has " << ef.residual.size() << " elements";
  }
}

inline void check_feedback_refuses_another_length() {
  const std::string what = "compress_with_feedback with a residual of 6 elements and a gradient of 5";
  dtrain::ErrorFeedback ef(6);
  try {
    dtrain::student::compress_with_feedback(ef, Vector::Ones(5), 2);
    ADD_FAILURE() << what << " returned, where it throws std::invalid_argument";
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " threw another exception (" << e.what() << "), where it throws std::invalid_argument";
  }
}

// --- sparse_allreduce_mean ---

// Rank q's K entries of N: indices q, q + 5, q + 10, ... (mod N; they overlap
// across ranks), values 100 (q+1) + j + 0.5: never a whole number.
inline dtrain::Sparse rank_entries(int q, long n, long k) {
  std::set<long> at;
  for (long j = 0; static_cast<long>(at.size()) < k; ++j) at.insert((q + 5 * j + j / n) % n);
  dtrain::Sparse s;
  s.n = n;
  s.index.assign(at.begin(), at.end());
  s.value.resize(k);
  for (long j = 0; j < k; ++j) s.value(j) = 100.0 * (q + 1) + static_cast<double>(j) + 0.5;
  return s;
}

inline std::string call_said(const dtrain::ledger::LoggedCall& c) {
  std::ostringstream out;
  out << dtrain::facts::kOpNames[c.op] << " of " << c.count << " elements";
  if (!std::isnan(c.first)) out << ", the first " << c.first << ", summing to " << c.sum;
  return out.str();
}

// The mean of every rank's dense vector, and the calls: an allgather of the
// K indices, then one of the K values, nothing else.
inline void check_sparse_mean(long n, long k) {
  Communicator& comm = world();
  const int p = comm.size(), r = comm.rank();
  const dtrain::Sparse mine = rank_entries(r, n, k);
  Vector want = Vector::Zero(n);  // (N)
  for (int q = 0; q < p; ++q) want += dtrain::dense(rank_entries(q, n, k));
  want /= p;
  dtrain::ledger::CallLog log;
  const Vector got = dtrain::student::sparse_allreduce_mean(mine, comm);
  std::vector<dtrain::ledger::LoggedCall> calls;
  for (const auto& c : log.take())
    if (c.event == dtrain::ledger::LoggedCall::Event::Call) calls.push_back(c);
  std::ostringstream where;
  where << "sparse_allreduce_mean on rank " << r << " of " << p << " (K = " << k << " of N = " << n << ")";
  Vector index_sent(k);  // (K): the indices as the handout sends them
  for (long j = 0; j < k; ++j) index_sent(j) = static_cast<double>(mine.index[static_cast<std::size_t>(j)]);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double firsts[2] = {k > 0 ? index_sent(0) : nan, k > 0 ? mine.value(0) : nan};
  // As the call log adds them (sent_digest.h).
  const double sums[2] = {dtrain::comm_detail::digest_of(index_sent.data(), k).sum,
                          dtrain::comm_detail::digest_of(mine.value.data(), k).sum};
  const char* carries[2] = {"the indices", "the values"};
  std::ostringstream made;
  for (std::size_t i = 0; i < calls.size(); ++i) made << (i ? "; " : "") << call_said(calls[i]);
  EXPECT_EQ(calls.size(), 2u) << where.str() << ": made " << calls.size() << " calls (" << made.str()
                              << "), where it makes two: an allgather of the K indices, then one of the K values";
  for (std::size_t i = 0; i < calls.size() && i < 2; ++i) {
    const auto& c = calls[i];
    // NaN: what the call sent was not seen (nothing sent; on one rank the side carries no values).
    const bool same_content = std::isnan(c.first) || (c.first == firsts[i] && c.sum == sums[i]);
    if (std::string(dtrain::facts::kOpNames[c.op]) == "allgather" && c.count == k && same_content) continue;
    dtrain::ledger::LoggedCall wanted = c;
    wanted.op = dtrain::facts::kAllgather;
    wanted.count = k;
    wanted.first = firsts[i];
    wanted.sum = sums[i];
    ADD_FAILURE() << where.str() << ", call " << i + 1 << ": " << call_said(c) << ", where the handout's gathers "
                  << carries[i] << ": " << call_said(wanted);
  }
  EXPECT_VECTOR_NEAR(got, want) << where.str() << ": the mean of every rank's dense vector";
}

}  // namespace kit

// ring_checks.h: the checks of Part 11's cases, public and hidden: the
// sum, no collective, and each rank's messages and bytes by the ledger.
// Rank r's buffer holds 1000 (r+1) + i, so the sum over n ranks is
// 500 n (n+1) + n i: the result says whose buffers were added, and how often.
#pragma once

#include <set>
#include <string>

#include "comm_runtime.h"
#include "ring_calls.h"
#include "kit_test.h"
#include "kit_facts.h"  // the volumes, generated from kit/facts.py

namespace kit {

inline Vector encoded(int r, Eigen::Index length) {
  Vector v(length);
  for (Eigen::Index i = 0; i < length; ++i) v(i) = 1000.0 * (r + 1) + static_cast<double>(i);
  return v;
}

inline Vector expected_sum(int n, Eigen::Index length) {
  Vector v(length);
  for (Eigen::Index i = 0; i < length; ++i) v(i) = 500.0 * n * (n + 1) + static_cast<double>(n) * i;
  return v;
}

// What one call sent from this rank, by the ledger's count.
struct Traffic {
  std::set<std::string> kinds;  // the operations it called
  std::set<int> to, from;       // the ranks it sent to and received from
  long messages = 0;            // point-to-point calls that sent
  // The bytes its point-to-point calls sent, from the ledger's own log of
  // them, never from the Communicator's counter: that is a field of an
  // object the student's code holds, and could be written.
  std::uint64_t bytes = 0;
};

enum class Kind { Naive, Ring };

inline Vector run(Kind kind, const Vector& src, Communicator& comm, Traffic& traffic) {
  dtrain::ledger::CallLog log;
  Vector out = kind == Kind::Naive ? dtrain::student::naive_allreduce(src, comm)
                                   : dtrain::student::ring_allreduce(src, comm);
  for (const auto& call : log.take()) {
    traffic.kinds.insert(dtrain::facts::kOpNames[call.op]);
    if (call.dest >= 0) {
      traffic.to.insert(call.dest);
      ++traffic.messages;
      traffic.bytes += static_cast<std::uint64_t>(call.count) * sizeof(double);
    }
    if (call.source >= 0) traffic.from.insert(call.source);
  }
  return out;
}

inline void expect_point_to_point_only(const Traffic& t) {
  for (const std::string& kind : t.kinds)
    EXPECT_TRUE(kind == "send" || kind == "recv" || kind == "sendrecv")
        << "called " << kind << ": Part 11 builds the allreduce from send, recv and sendrecv only";
}

// These checks say their expectation in the words a failure shows (the
// point-to-point calls too: staff/tests/test_facts.py reads them); the
// charts' formulas (kit/facts.py, kit/ring.py) must say the same, on every
// length and rank count the cases try. Independent of the code under test:
// only a kit whose two statements differ fails here.
inline void agrees_with_the_facts(std::uint64_t checked, std::uint64_t facts) {
  EXPECT_EQ(checked, facts) << "ring_checks.h and kit/facts.py give other byte counts";
}

// Runs one allreduce and checks its sum and that it used no collective.
inline Traffic summed(Kind kind, Eigen::Index length) {
  Communicator& comm = world();
  Traffic t;
  const Vector got = run(kind, encoded(comm.rank(), length), comm, t);
  EXPECT_VECTOR_NEAR(got, expected_sum(comm.size(), length));
  expect_point_to_point_only(t);
  return t;
}

inline void check_naive(Eigen::Index length) {
  const int n = world().size(), r = rank();
  const Traffic t = summed(Kind::Naive, length);
  const std::uint64_t buffer = static_cast<std::uint64_t>(length) * sizeof(double);
  if (r == 0) {
    EXPECT_EQ(t.messages, n - 1) << "rank 0 sends the sum to each other rank once";
    EXPECT_EQ(t.bytes, (n - 1) * buffer);
  } else {
    EXPECT_EQ(t.messages, 1) << "rank " << r << " sends its buffer to rank 0, once";
    EXPECT_EQ(t.bytes, buffer);
    EXPECT_EQ(t.to, std::set<int>{0});
  }
  agrees_with_the_facts(r == 0 ? (n - 1) * buffer : buffer, dtrain::facts::ring::naive_allreduce_bytes(length, n, r));
}

inline void check_ring(Eigen::Index length) {
  const int n = world().size(), r = rank();
  const Traffic t = summed(Kind::Ring, length);
  EXPECT_EQ(t.messages, 2 * (n - 1)) << "n-1 reduce-scatter steps and n-1 all-gather steps, one message each";
  if (n > 1) {
    EXPECT_EQ(t.to, std::set<int>{(r + 1) % n}) << "a ring sends only to the next rank";
    EXPECT_EQ(t.from, std::set<int>{(r - 1 + n) % n}) << "a ring receives only from the previous rank";
  }
  // Every message is one block of floor(L/n) or ceil(L/n) elements.
  const std::uint64_t small = static_cast<std::uint64_t>(length / n) * sizeof(double);
  const std::uint64_t large = static_cast<std::uint64_t>((length + n - 1) / n) * sizeof(double);
  EXPECT_GE(t.bytes, 2 * (n - 1) * small);
  EXPECT_LE(t.bytes, 2 * (n - 1) * large);
  agrees_with_the_facts(2 * (n - 1) * small, dtrain::facts::ring::ring_allreduce_low(length, n));
  agrees_with_the_facts(2 * (n - 1) * large, dtrain::facts::ring::ring_allreduce_high(length, n));
}

}  // namespace kit

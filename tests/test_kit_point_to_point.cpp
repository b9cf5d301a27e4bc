// The kit's own checks of the communicator's point-to-point calls (comm.h),
// which the extension parts build on (not a graded part; run on the
// reference by CTest as reference/point_to_point):
//   tools/kitrun -n 4 build/reference/kit_tests --gtest_filter='KitPointToPoint*'
// Every rank's data encodes its rank, so what a rank receives says who sent it.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

#include "comm_runtime.h"
#include "kit_test.h"
#include "thrown.h"
#include "trace.h"

using namespace kit;

namespace {

// (L) holding 100 * rank + 0, 1, ...: the sender's signature.
Vector signed_by(int sender, int length) {
  Vector v(length);
  for (int i = 0; i < length; ++i) v(i) = 100.0 * sender + i;
  return v;
}

// The message of the std::invalid_argument that `call` throws, or "" if it throws none.
std::string refusal(const std::function<void()>& call) { return kit::what_thrown<std::invalid_argument>(call); }

}  // namespace

TEST(KitPointToPoint, RingShiftDeliversTheLeftNeighboursData) {
  Communicator& comm = world();
  const int n = comm.size(), r = rank();
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  Vector got(5);
  comm.sendrecv(signed_by(r, 5), right, 0, got, left, 0);
  EXPECT_VECTOR_NEAR(got, signed_by(left, 5));
  Matrix from_right(2, 3);  // the other way round, as a Matrix
  comm.sendrecv(arange(2, 3, 10.0 * r), left, 1, from_right, right, 1);
  EXPECT_MATRIX_NEAR(from_right, arange(2, 3, 10.0 * right));
}

TEST(KitPointToPoint, PairsSendThenReceiveAndCountTheBytesSent) {
  Communicator& comm = world();
  const int r = rank(), partner = r ^ 1;  // 0-1, 2-3: pairs (4 ranks)
  ASSERT_LT(partner, comm.size());
  const std::uint64_t before = comm.bytes_transferred();
  Vector got(7);
  if (r % 2 == 0) {
    comm.send(signed_by(r, 7), partner, 3);
    comm.recv(got, partner, 4);
  } else {
    comm.recv(got, partner, 3);
    comm.send(signed_by(r, 7), partner, 4);
  }
  EXPECT_VECTOR_NEAR(got, signed_by(partner, 7));
  EXPECT_EQ(comm.bytes_transferred() - before, 7 * sizeof(double)) << "a send adds the bytes it sends, a recv none";
}

// As with MPI's own sendrecv: its message in arrives while its message out still waits
// for a partner that receives only after its own plain send (a message past
// any MPI's eager size, so nothing is buffered on the way).
TEST(KitPointToPoint, ASendrecvMeetsAPlainSendThenRecv) {
  Communicator& comm = world();
  const int r = rank();
  const int length = 100000;
  Vector got(length);
  if (r == 0) {
    comm.send(signed_by(0, length), 1, 0);
    comm.recv(got, 1, 1);
    EXPECT_VECTOR_NEAR(got, signed_by(1, length));
  } else if (r == 1) {
    comm.sendrecv(signed_by(1, length), 0, 1, got, 0, 0);
    EXPECT_VECTOR_NEAR(got, signed_by(0, length));
  }
}

TEST(KitPointToPoint, TagsKeepMessagesApart) {
  Communicator& comm = world();
  const int r = rank();
  if (r == 0) {
    comm.send(signed_by(1, 2), 1, 7);
    comm.send(signed_by(2, 3), 1, 8);
  } else if (r == 1) {
    Vector second(3), first(2);
    comm.recv(first, 0, 7);
    comm.recv(second, 0, 8);
    EXPECT_VECTOR_NEAR(first, signed_by(1, 2));
    EXPECT_VECTOR_NEAR(second, signed_by(2, 3));
  }
}

// Rank 0 sends 8 elements, rank 1 expects 6: both fail, naming both sizes
// and the tag, and no element moved (the pair's next message arrives intact).
TEST(KitPointToPoint, ASizeMismatchFailsBothRanksBeforeThePayload) {
  Communicator& comm = world();
  const int r = rank();
  if (r == 0) {
    const std::string why = refusal([&] { comm.send(signed_by(0, 8), 1, 5); });
    EXPECT_NE(why.find("rank 0 sends 8 elements to rank 1 (tag 5), whose recv expects 6"), std::string::npos) << why;
    comm.send(signed_by(0, 4), 1, 6);
  } else if (r == 1) {
    Vector small(6);
    const std::string why = refusal([&] { comm.recv(small, 0, 5); });
    EXPECT_NE(why.find("rank 0 sends 8 elements to rank 1 (tag 5), whose recv expects 6"), std::string::npos) << why;
    Vector next(4);
    comm.recv(next, 0, 6);
    EXPECT_VECTOR_NEAR(next, signed_by(0, 4));
  }
}

// In a ring of sendrecvs where only the link 0 -> 1 disagrees, ranks 0 and 1
// fail and every other link delivers: no rank is left waiting.
TEST(KitPointToPoint, ABadLinkInARingFailsOnlyItsTwoRanks) {
  Communicator& comm = world();
  const int n = comm.size(), r = rank();
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  Vector got(r == 1 ? 4 : 3);
  const std::string why = refusal([&] { comm.sendrecv(signed_by(r, 3), right, 2, got, left, 2); });
  if (r == 0 || r == 1) {
    EXPECT_NE(why.find("rank 0 sends 3 elements to rank 1 (tag 2), whose recv expects 4"), std::string::npos) << why;
  } else {
    EXPECT_EQ(why, "");
  }
  if (r != 1) {
    EXPECT_VECTOR_NEAR(got, signed_by(left, 3));
  }
}

TEST(KitPointToPoint, BadPeersAndTagsAreRefusedBeforeAnyMessage) {
  Communicator& comm = world();
  const int r = rank(), n = comm.size();
  Vector v(2);
  EXPECT_NE(refusal([&] { comm.send(v, r, 0); }).find("a send to itself would wait forever"), std::string::npos);
  EXPECT_NE(refusal([&] { comm.recv(v, r, 0); }).find("a recv to itself would wait forever"), std::string::npos);
  EXPECT_NE(refusal([&] { comm.send(v, n, 0); }).find("dest must be a rank of"), std::string::npos);
  EXPECT_NE(refusal([&] { comm.recv(v, -1, 0); }).find("source must be a rank of"), std::string::npos);
  EXPECT_NE(refusal([&] { comm.send(v, (r + 1) % n, -1); }).find("tag must be in 0..10000, got -1"), std::string::npos);
  EXPECT_NE(refusal([&] { comm.send(v, (r + 1) % n, 10001); }).find("got 10001"), std::string::npos);
  EXPECT_NE(refusal([&] { comm.sendrecv(v, 0, 0, v, 0, 0); }).find("same object"), std::string::npos);
}

// The ledger records each call with its other end, outside the sequence of
// collectives, and says how many a rank made.
TEST(KitPointToPoint, TheLedgerRecordsEachCallWithItsOtherEnd) {
  Communicator& comm = world();
  const int n = comm.size(), r = rank();
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  dtrain::ledger::CallLog log;
  Vector got(4);
  comm.sendrecv(signed_by(r, 4), right, 0, got, left, 0);
  if (r % 2 == 0) {
    comm.send(got, r ^ 1, 1);
  } else {
    comm.recv(got, r ^ 1, 1);
  }
  const auto calls = log.take();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].op, dtrain::facts::kSendrecv);
  EXPECT_EQ(calls[0].dest, right);
  EXPECT_EQ(calls[0].source, left);
  EXPECT_EQ(calls[1].op, r % 2 == 0 ? dtrain::facts::kSend : dtrain::facts::kRecv);
  EXPECT_EQ(calls[1].count, 4);
  EXPECT_EQ(r % 2 == 0 ? calls[1].dest : calls[1].source, r ^ 1);
  EXPECT_EQ(dtrain::ledger::state(), "after 2 point-to-point calls on world");
}

// A trace ties each message's send to its recv (a flow event on each rank,
// the same id), and the message arrives after it left.
TEST(KitPointToPoint, ATraceTiesEachSendToItsRecv) {
  Communicator& comm = world();
  const int n = comm.size(), r = rank();
  const int right = (r + 1) % n, left = (r - 1 + n) % n;
  const bool was_tracing = dtrain::ledger::tracing();
  dtrain::ledger::take_entries();  // this case's calls only
  dtrain::start_trace(comm);
  Vector got(6);
  for (int round = 0; round < 2; ++round) comm.sendrecv(signed_by(r, 6), right, round, got, left, round);
  // As text, not a file: the test binary's system-call filter opens none (platform.h).
  const std::string text = dtrain::trace_text(comm, comm.bytes_transferred());
  dtrain::ledger::set_tracing(was_tracing);
  if (r != 0) return;
  const nlohmann::json trace = nlohmann::json::parse(text);
  std::map<std::uint64_t, std::pair<int, double>> left_at, arrived_at;  // id -> (rank, ts)
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "p2p" || e["ph"] == "X") continue;
    auto& seen = e["ph"] == "s" ? left_at : arrived_at;
    EXPECT_TRUE(seen.emplace(e["id"].get<std::uint64_t>(), std::make_pair(e["pid"].get<int>(), e["ts"].get<double>()))
                    .second)
        << "two flow events of one kind share the id " << e["id"];
  }
  EXPECT_EQ(left_at.size(), static_cast<size_t>(2 * n)) << "2 rounds of one message per rank";
  for (const auto& [id, from] : left_at) {
    const auto to = arrived_at.find(id);
    ASSERT_NE(to, arrived_at.end()) << "the message rank " << from.first << " sent has no arrival";
    EXPECT_EQ(to->second.first, (from.first + 1) % n) << "rank " << from.first << "'s message arrived elsewhere";
    EXPECT_GE(to->second.second, from.second) << "a message arrived before it left";
  }
  EXPECT_EQ(arrived_at.size(), left_at.size());
}

// The kit's own checks of the communicator's non-blocking allreduce and its
// Request (comm.h), which Part 13 builds on (not a graded part; run on the
// reference by CTest as reference/requests):
//   tools/kitrun -n 2 build/reference/kit_tests --gtest_filter='KitRequests*'
// Every rank's data encodes its rank, so a sum says whose buffers it added.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "comm_runtime.h"
#include "kit_test.h"
#include "observe.h"
#include "thrown.h"

using namespace kit;
using dtrain::Request;
using Event = dtrain::ledger::LoggedCall::Event;

namespace {

// (L) holding 10^(rank) + i: the sum over n ranks is 111...1 (n ones) + n i.
Vector signed_by(int r, int length) {
  Vector v(length);
  for (int i = 0; i < length; ++i) v(i) = std::pow(10.0, r) + i;
  return v;
}
Vector summed(int n, int length) {
  Vector v(length);
  double ones = 0;
  for (int r = 0; r < n; ++r) ones += std::pow(10.0, r);
  for (int i = 0; i < length; ++i) v(i) = ones + static_cast<double>(n) * i;
  return v;
}

// The rule messages a block of code leaves (the harness's own sink is put
// back afterwards): a dropped request's, for one.
std::vector<std::string> g_broken;
class RulesCaught {
 public:
  RulesCaught() : harness_(dtrain::set_rule_sink([](const std::string& what) { g_broken.push_back(what); })) {
    g_broken.clear();
  }
  ~RulesCaught() { dtrain::set_rule_sink(harness_); }

 private:
  dtrain::RuleSink harness_;
};

}  // namespace

TEST(KitRequests, AnIallreduceSumsAsAllreduceAndCountsTheSameBytes) {
  Communicator& comm = world();
  const int n = comm.size();
  const Vector src = signed_by(rank(), 5);
  Vector dst(5), blocking(5);
  const std::uint64_t before = comm.bytes_transferred();
  Request request = comm.iallreduce(src, dst);
  request.wait();
  EXPECT_VECTOR_NEAR(dst, summed(n, 5));
  const std::uint64_t nonblocking = comm.bytes_transferred() - before;
  comm.allreduce(src, blocking);
  EXPECT_EQ(comm.bytes_transferred() - before - nonblocking, nonblocking) << "iallreduce counts as allreduce";
  request.wait();  // a second wait, and a test after it, return at once
  EXPECT_TRUE(request.test());
  Request none;
  EXPECT_TRUE(none.test());
  none.wait();
}

TEST(KitRequests, TestReturnsTrueOnceAndTheLedgerLogsStartAndEnd) {
  Communicator& comm = world();
  const Vector src = signed_by(rank(), 3);  // alive until the request completes
  Vector dst(3);
  dtrain::ledger::CallLog log;
  Request request = comm.iallreduce(src, dst, dtrain::Op::Max);
  Request moved = std::move(request);  // the call goes with the move
  EXPECT_TRUE(request.test()) << "a moved-from request holds no call";
  while (!moved.test()) {
  }
  EXPECT_VECTOR_NEAR(dst, signed_by(comm.size() - 1, 3));
  const auto calls = log.take();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].event, Event::Call);
  EXPECT_EQ(calls[0].op, dtrain::facts::kIallreduce);
  EXPECT_EQ(calls[1].event, Event::Tested);
  EXPECT_EQ(calls[0].request, calls[1].request);
  EXPECT_GT(calls[0].request, 0);
}

// test() calls that find a request still running are counted per student
// call: one tested_running entry when the call ends, or the count on the
// tested entry of the call that sees it complete (Part 13 tells a loop of
// test() in grad_ready by them). Rank 1 starts its iallreduce only once
// rank 0's call has ended (the agreement check, a collective of its own,
// is off here), so rank 0's tests in it cannot find the sum complete.
TEST(KitRequests, TestsThatFindARequestRunningAreCountedPerStudentCall) {
  Communicator& comm = world();
  ASSERT_EQ(comm.size(), 2) << "run on 2 ranks (kit/part_table.py)";
  const Vector src = signed_by(rank(), 3);
  Vector dst(3), token(1);
  dtrain::ledger::CallLog log;
  struct Unchecked {
    Unchecked() { dtrain::ledger::set_checking(false); }
    ~Unchecked() { dtrain::ledger::set_checking(true); }
  } unchecked;
  Request request;
  if (rank() == 0) {
    request = comm.iallreduce(src, dst);
    {
      const dtrain::StudentScope call("one_call");
      for (int i = 0; i < 3; ++i) EXPECT_FALSE(request.test());
    }
    comm.send(token, 1, 0);
    const dtrain::StudentScope call("another_call");
    request.wait();
  } else {
    comm.recv(token, 0, 0);
    request = comm.iallreduce(src, dst);
    request.wait();
  }
  EXPECT_VECTOR_NEAR(dst, summed(2, 3));
  using Seen = std::vector<std::pair<Event, int>>;  // the iallreduce's own call, then its ends
  Seen got;
  for (const auto& call : log.take())
    if (call.request != 0) got.emplace_back(call.event, call.failed_tests);
  if (rank() == 0)
    EXPECT_EQ(got, (Seen{{Event::Call, 0}, {Event::TestedRunning, 3}, {Event::Waited, 0}}));
  else
    EXPECT_EQ(got, (Seen{{Event::Call, 0}, {Event::Waited, 0}}));
}

TEST(KitRequests, TheRollCallNamesARequestNobodyWaitsFor) {
  Communicator& comm = world();
  const Vector src = signed_by(rank(), 4);
  Vector dst(4);
  Request request = comm.iallreduce(src, dst);
  const std::string state = dtrain::ledger::state();
  EXPECT_NE(state.find("1 request in flight that nobody waits for: iallreduce #1 on world (4 elements)"),
            std::string::npos)
      << state;
  request.wait();
  EXPECT_EQ(dtrain::ledger::state().find("request"), std::string::npos) << dtrain::ledger::state();
}

TEST(KitRequests, ADroppedRequestFailsNamingItsCallAndIsWaitedFor) {
  Communicator& comm = world();
  const Vector src = signed_by(rank(), 6);
  Vector dst(6);
  {
    const RulesCaught caught;
    { Request dropped = comm.iallreduce(src, dst); }
    ASSERT_EQ(g_broken.size(), 1u);
    EXPECT_EQ(g_broken[0], "a Request was destroyed before anyone waited for it: iallreduce #1 on world (6 elements); "
                           "call wait() on every request (or test() it until it returns true) before it goes away");
    // The kit waited for it: dst holds the sum.
    EXPECT_VECTOR_NEAR(dst, summed(comm.size(), 6));
    Request first = comm.iallreduce(src, dst);
    first = comm.iallreduce(src, dst);  // assigning over a request in flight drops it
    ASSERT_EQ(g_broken.size(), 2u);
    EXPECT_NE(g_broken[1].find("iallreduce #2 on world (6 elements)"), std::string::npos) << g_broken[1];
    first.wait();
  }
}

TEST(KitRequests, RanksAgreeOnARequestWhenItStarts) {
  Communicator& comm = world();
  const int length = rank() == 0 ? 3 : 4;
  const Vector src = signed_by(rank(), length);
  Vector dst(length);
  const std::string refused = what_thrown<dtrain::CollectiveMismatch>([&] {
    Request request = comm.iallreduce(src, dst);
    request.wait();
  });
  EXPECT_NE(refused.find("collective #1 on world: ranks disagree"), std::string::npos) << refused;
  EXPECT_NE(refused.find("rank 0: iallreduce, 3 elements (Sum)"), std::string::npos) << refused;
  EXPECT_NE(refused.find("iallreduce, 4 elements (Sum)"), std::string::npos) << refused;
}

// The records' builders (tests/harness/records.h): one process, no MPI.
//   build/framework_tests --gtest_filter='Records*'   (CTest: framework/units)
// With KIT_RECORDS_OUT=PATH the last case also writes one record of every
// kind to PATH; the staff suite
// (staff/tests/test_records.py) reads them back with kit/records.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "records.h"

namespace {

// Text that breaks a JSON writer that does not escape: a data path or a
// failure message can hold any of these.
const std::string kAwkward = "quote \" backslash \\ newline\n tab\t bell\a end";

TEST(Records, EscapesEveryCharacterJsonForbids) {
  EXPECT_EQ(records::json_string(kAwkward),
            "\"quote \\\" backslash \\\\ newline\\n tab\\t bell\\u0007 end\"");
}

TEST(Records, BuildEachKind) {
  EXPECT_EQ(records::plan(4, {"A.b", "C.d"}),
            "{\"event\":\"plan\",\"ranks\":4,\"cases\":[\"A.b\",\"C.d\"],\"syscall_filter\":\"on\"}");
  EXPECT_EQ(records::plan(1, {}, "off: why"), "{\"event\":\"plan\",\"ranks\":1,\"cases\":[],\"syscall_filter\":\"off: why\"}");
  EXPECT_EQ(records::result("A.b", false, 0.25, {{2, "no"}}),
            "{\"event\":\"result\",\"case\":\"A.b\",\"status\":\"fail\",\"seconds\":0.250,"
            "\"failures\":[{\"rank\":2,\"message\":\"no\"}]}");
  EXPECT_EQ(records::value("A.b", 1, "forward#1", 1, 3, 1, {0.1, 2, INFINITY}),
            "{\"event\":\"value\",\"case\":\"A.b\",\"rank\":1,\"label\":\"forward#1\",\"rows\":1,\"cols\":3,"
            "\"stride\":1,\"values\":[0.10000000000000001,2,null]}");
  EXPECT_EQ(records::rank_failure("A.b", 3, "x"), "{\"event\":\"rank_failure\",\"case\":\"A.b\",\"rank\":3,\"message\":\"x\"}");
  EXPECT_EQ(records::abort_prefix("A.b", 1) + "hung" + records::kAbortSuffix,
            "{\"event\":\"abort\",\"case\":\"A.b\",\"rank\":1,\"why\":\"hung\"}\n");
  EXPECT_EQ(records::rollcall("A.b", 0, "s", 5.04),
            "{\"event\":\"rollcall\",\"case\":\"A.b\",\"rank\":0,\"state\":\"s\",\"seconds\":5.0,"
            "\"phase\":\"running\"}");
}

TEST(Records, WriteEveryKindForTheRunner) {
  const char* path = std::getenv("KIT_RECORDS_OUT");
  if (path == nullptr) GTEST_SKIP() << "KIT_RECORDS_OUT is not set: nothing to write";
  std::ofstream out(path);
  out << records::plan(8, {"Suite.One", "Suite." + kAwkward}, records::kFilterOffOtherRank) << "\n"
      << records::value("Suite.One", 3, "forward#1", 2, 3, 2, {0.5, -1e300, std::nan("")}) << "\n"
      << records::result("Suite.One", true, 1.5, {}) << "\n"
      << records::result("Suite." + kAwkward, false, 0.125, {{0, kAwkward}, {7, "second"}}) << "\n"
      << records::rank_failure("Suite.One", 5, kAwkward) << "\n"
      << records::abort_prefix("Suite.One", 6) << "crashed with SIGSEGV" << records::kAbortSuffix
      << records::rollcall("Suite.One", 2, "waiting in allreduce #3 on dp_comm (2 elements)", 5.04, "running",
                           records::rollcall_wait("allreduce", -1, -1, -1, -1, 3, 2, 4503599627370495)) << "\n"
      << records::rollcall("Suite.One", 3, "waiting in send to rank 1 (tag 4)", 5.0, "running",
                           records::rollcall_wait("send", 1, 4, -1, -1, -1, -1, -1)) << "\n"
      << records::rollcall("Suite.One", 1, "finished the case after 1 collective on world", 5.0, "finished")
      << "\n";
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

}  // namespace

// The seal of the test binary's records (tests/results_seal.cpp): one process, no MPI.
//   build/framework_tests --gtest_filter='ResultsSeal*'   (CTest: framework/units)
// The Python side (kit/records.py) verifies with the standard hmac module,
// so these published answers tie the two implementations together.
#include <gtest/gtest.h>

#include <string>

#include "results_seal.h"

namespace {

std::string hmac_of(const std::string& key, const std::string& message) {
  return harness::hmac_sha256_hex(reinterpret_cast<const uint8_t*>(key.data()), key.size(), message);
}

TEST(ResultsSeal, MatchesRfc4231ShortKey) {
  EXPECT_EQ(hmac_of("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(ResultsSeal, MatchesRfc4231KeyLongerThanABlock) {
  EXPECT_EQ(hmac_of(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(ResultsSeal, WithoutAKeyRecordsStayUnsealed) {
  EXPECT_EQ(harness::seal_record("{\"event\":\"plan\"}"), "{\"event\":\"plan\"}");
}

}  // namespace

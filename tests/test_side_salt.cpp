// The MPI side's salt of the hidden cases' inputs (framework/comm/side/
// comm_side_salt.h): its keyed hash against SipHash-2-4's published
// vectors, and the salting's promises. One process, no MPI.
//   build/framework_tests --gtest_filter='SideSalt*'   (CTest: framework/units)
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "comm_side_salt.h"

namespace {

using dtrain::side::keyed_hash;
using dtrain::side::salt_values;
using dtrain::side::take_salt;

// The reference vectors' key: the bytes 0, 1, ..., 15.
constexpr std::uint64_t kK0 = 0x0706050403020100ULL, kK1 = 0x0f0e0d0c0b0a0908ULL;

TEST(SideSalt, KeyedHashIsSipHash24) {
  EXPECT_EQ(keyed_hash(kK0, kK1, nullptr, 0), 0x726fdb47dd0e0e31ULL) << "the empty message";
  const std::uint64_t bytes = 0x0706050403020100ULL;  // the message 0, 1, ..., 7
  double word = 0;
  std::memcpy(&word, &bytes, sizeof word);
  EXPECT_EQ(keyed_hash(kK0, kK1, &word, 1), 0x93f5f5799a932462ULL) << "the message of 8 bytes";
}

// A job folder holding a salt, as the runner leaves one (kit/channels.py);
// a regular file reads as the pipe does.
std::string folder_with_salt(std::uint64_t salt) {
  char dir[] = "/tmp/kit-salt-test-XXXXXX";
  if (mkdtemp(dir) == nullptr) return "";
  FILE* f = std::fopen((std::string(dir) + "/salt").c_str(), "wb");
  if (f == nullptr) return "";
  std::fwrite(&salt, sizeof salt, 1, f);
  std::fclose(f);
  return dir;
}

TEST(SideSalt, WithoutASaltValuesStayAsTheyAre) {
  EXPECT_FALSE(take_salt("")) << "a job with no folder";
  EXPECT_FALSE(take_salt("/nonexistent-kit-folder")) << "a folder with no salt";
  std::vector<double> v = {1.5, -2.0, 0.0};
  salt_values(v.data(), v.size());
  EXPECT_EQ(v, (std::vector<double>{1.5, -2.0, 0.0}));
}

TEST(SideSalt, EachInputIsScaledAndShiftedByItsOwnFactors) {
  const std::string dir = folder_with_salt(0x1234567890abcdefULL);
  ASSERT_FALSE(dir.empty());
  ASSERT_TRUE(take_salt(dir));
  std::remove((dir + "/salt").c_str());
  rmdir(dir.c_str());
  // Zeros become the offset, in [0.25, 0.5); ones the scale plus it, the scale in [0.5, 0.75).
  std::vector<double> zeros(4, 0.0), ones(4, 1.0);
  salt_values(zeros.data(), zeros.size());
  salt_values(ones.data(), ones.size());
  const double offset = zeros[0];
  EXPECT_GE(offset, 0.25);
  EXPECT_LT(offset, 0.5);
  for (double z : zeros) EXPECT_EQ(z, offset);
  // The same input is salted alike every time (every rank salts its copy of a shared input).
  std::vector<double> again(4, 1.0);
  salt_values(again.data(), again.size());
  EXPECT_EQ(again, ones);
  // Inputs that differ get factors of their own: over a few, not all alike.
  int alike = 0;
  for (int i = 1; i <= 8; ++i) {
    std::vector<double> v(4, 0.0);
    v[0] = i;
    salt_values(v.data(), v.size());
    alike += v[1] == offset;
  }
  EXPECT_LT(alike, 8) << "eight inputs all got the zeros' offset: the salting ignores the input";
}

}  // namespace

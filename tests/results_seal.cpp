// results_seal.cpp: the key that makes the test binary's results unforgeable
// by the code under test (see results_seal.h).
//
// The runner (tools/partrun.py) starts a job with KIT_RESULTS_KEY=stdin and
// writes a fresh random key, as one line of hex, to mpirun's standard input,
// which mpirun hands to rank 0. A constructor of priority 101 reads it before
// any default-priority constructor runs (the student files' static objects
// included; the grader's static checks reject student constructors with a
// priority), then detaches standard input. The key never reaches a file,
// the environment or the output: only the HMAC-SHA-256 of each record does.
#include "results_seal.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace harness {
namespace {

// ---- SHA-256 (FIPS 180-4), just enough for HMAC over short records ----

constexpr std::array<uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

class Sha256 {
 public:
  void update(const uint8_t* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      block_[fill_++] = data[i];
      if (fill_ == 64) compress();
    }
    bits_ += 8 * static_cast<uint64_t>(n);
  }
  void update(const std::string& s) { update(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }
  std::array<uint8_t, 32> finish() {
    const uint64_t bits = bits_;
    const uint8_t one = 0x80, zero = 0;
    update(&one, 1);
    while (fill_ != 56) update(&zero, 1);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(length, 8);
    std::array<uint8_t, 32> digest{};
    for (int i = 0; i < 32; ++i) digest[i] = static_cast<uint8_t>(state_[i / 4] >> (24 - 8 * (i % 4)));
    return digest;
  }

 private:
  void compress() {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(block_[4 * i]) << 24 | uint32_t(block_[4 * i + 1]) << 16 | uint32_t(block_[4 * i + 2]) << 8 |
             uint32_t(block_[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4], f = state_[5],
             g = state_[6], h = state_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    const uint32_t add[8] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i) state_[i] += add[i];
    fill_ = 0;
  }

  uint32_t state_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block_[64] = {};
  size_t fill_ = 0;
  uint64_t bits_ = 0;
};

constexpr size_t kKeyBytes = 32;
uint8_t g_key[kKeyBytes];
bool g_have_key = false;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Priority 101: before every constructor of default priority, so before any
// code under test. Only rank 0 gets mpirun's standard input.
__attribute__((constructor(101))) void read_results_key() {
  const char* mode = std::getenv("KIT_RESULTS_KEY");
  if (mode == nullptr || std::strcmp(mode, "stdin") != 0) return;
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank != nullptr && std::strcmp(rank, "0") != 0) return;
  char hex[2 * kKeyBytes + 1];
  size_t got = 0;
  while (got < sizeof hex) {
    const ssize_t n = ::read(STDIN_FILENO, hex + got, sizeof hex - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  // Nothing else may read what is left of standard input.
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDIN_FILENO);
    ::close(null_fd);
  }
  if (got < 2 * kKeyBytes) return;
  for (size_t i = 0; i < kKeyBytes; ++i) {
    const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return;
    g_key[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  std::memset(hex, 0, sizeof hex);
  g_have_key = true;
  // Other processes of the same user may not read this one's memory.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

std::string to_hex(const std::array<uint8_t, 32>& digest) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) out += {digits[b >> 4], digits[b & 15]};
  return out;
}

}  // namespace

std::string hmac_sha256_hex(const uint8_t* key, size_t key_len, const std::string& message) {
  uint8_t block[64] = {};
  if (key_len > sizeof block) {
    Sha256 h;
    h.update(key, key_len);
    const auto d = h.finish();
    std::memcpy(block, d.data(), d.size());
  } else {
    std::memcpy(block, key, key_len);
  }
  uint8_t inner_pad[64], outer_pad[64];
  for (int i = 0; i < 64; ++i) {
    inner_pad[i] = block[i] ^ 0x36;
    outer_pad[i] = block[i] ^ 0x5c;
  }
  Sha256 inner;
  inner.update(inner_pad, 64);
  inner.update(message);
  const auto inner_digest = inner.finish();
  Sha256 outer;
  outer.update(outer_pad, 64);
  outer.update(inner_digest.data(), inner_digest.size());
  return to_hex(outer.finish());
}

std::string seal_record(const std::string& record) {
  if (!g_have_key || record.empty() || record.back() != '}') return record;
  return record.substr(0, record.size() - 1) + ",\"mac\":\"" + hmac_sha256_hex(g_key, kKeyBytes, record) + "\"}";
}

}  // namespace harness

// comm_side_salt.cpp: the hidden cases' salt (comm_side_salt.h). The keyed
// hash is SipHash-2-4, a short keyed function built to be a pseudo-random
// function: with the inputs and the scales and offsets the program sees,
// finding the salt is a search of its 2^64 values.
#include "comm_side_salt.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dtrain::side {

namespace {

bool g_salted = false;
std::uint64_t g_salt = 0;

constexpr std::uint64_t rotl(std::uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
  std::uint64_t v0, v1, v2, v3;

  SipState(std::uint64_t k0, std::uint64_t k1)
      : v0(k0 ^ 0x736f6d6570736575ULL), v1(k1 ^ 0x646f72616e646f6dULL), v2(k0 ^ 0x6c7967656e657261ULL),
        v3(k1 ^ 0x7465646279746573ULL) {}

  void rounds(int n) {
    for (int i = 0; i < n; ++i) {
      v0 += v1, v1 = rotl(v1, 13), v1 ^= v0, v0 = rotl(v0, 32);
      v2 += v3, v3 = rotl(v3, 16), v3 ^= v2;
      v0 += v3, v3 = rotl(v3, 21), v3 ^= v0;
      v2 += v1, v1 = rotl(v1, 17), v1 ^= v2, v2 = rotl(v2, 32);
    }
  }

  void absorb(std::uint64_t word) {
    v3 ^= word;
    rounds(2);
    v0 ^= word;
  }
};

}  // namespace

std::uint64_t keyed_hash(std::uint64_t k0, std::uint64_t k1, const double* words, std::size_t count) {
  SipState s(k0, k1);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t w = 0;
    std::memcpy(&w, &words[i], sizeof w);
    s.absorb(w);
  }
  s.absorb((static_cast<std::uint64_t>(count * sizeof(double)) & 0xff) << 56);  // the last, empty block
  s.v2 ^= 0xff;
  s.rounds(4);
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

bool take_salt(const std::string& results_dir) {
  if (results_dir.empty()) return false;
  const std::string path = results_dir + "/salt";
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    std::fprintf(stderr, "kit_mpi_side: can't open the job's salt (%s): %s\n", path.c_str(), std::strerror(errno));
    std::exit(70);
  }
  // One copy per rank, 8 bytes each: a read of that much takes one whole copy or nothing.
  const ssize_t n = read(fd, &g_salt, sizeof g_salt);
  close(fd);
  if (n != static_cast<ssize_t>(sizeof g_salt)) {
    std::fprintf(stderr, "kit_mpi_side: the job's salt was not there for this rank (read %zd bytes)\n", n);
    std::exit(70);
  }
  g_salted = true;
  return true;
}

void salt_values(double* values, std::size_t count) {
  if (!g_salted || count == 0) return;
  const std::uint64_t h = keyed_hash(g_salt, rotl(g_salt, 29) ^ 0x6b69742d73616c74ULL, values, count);
  // A scale in [0.5, 0.75) and an offset in [0.25, 0.5), in steps of 1/4000:
  // the inputs stay distinct and non-integer.
  const double scale = 0.5 + static_cast<double>((h >> 20) % 1000) / 4000.0;
  const double offset = 0.25 + static_cast<double>((h >> 40) % 1000) / 4000.0;
  for (std::size_t i = 0; i < count; ++i) values[i] = values[i] * scale + offset;
}

}  // namespace dtrain::side

// random.h: a small seeded generator whose streams are the same on every
// platform (std::normal_distribution is not), so a seed means the same
// weights and the same shuffle on a student's laptop and on the grader.
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "tensor.h"

namespace dtrain {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next_u64() {  // splitmix64
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }  // [0, 1)

  double normal() {  // Box-Muller; the second value is dropped to keep the stream simple
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

  // rows x cols standard normal values scaled by `scale`, filled row by row.
  Matrix normal_matrix(int rows, int cols, double scale) {
    Matrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal() * scale;
    return m;
  }

  // A uniformly random order of 0..n-1 (Fisher-Yates).
  std::vector<int> permutation(int n) {
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    for (int i = n - 1; i > 0; --i) {
      const int j = static_cast<int>(next_u64() % static_cast<std::uint64_t>(i + 1));
      std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
    }
    return order;
  }

 private:
  std::uint64_t state_;
};

}  // namespace dtrain

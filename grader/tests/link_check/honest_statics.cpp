// Honest code the link check must accept: function-local statics, constant
// tables, a small static buffer, seeded random engines, timing, <cmath>.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace dtrain {
namespace {

constexpr std::array<int, 4> kSizes = {1, 2, 4, 8};
const char* const kName = "honest";
double scratch[512];  // 4 KiB: well under the limit

}  // namespace

double honest_statics(int n) {
  static int calls = 0;
  static const std::vector<double> table = [] {
    std::vector<double> t(16);
    for (size_t i = 0; i < t.size(); ++i) t[i] = std::sqrt(static_cast<double>(i));
    return t;
  }();
  ++calls;
  const auto started = std::chrono::steady_clock::now();
  std::mt19937 engine(static_cast<unsigned>(n));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 3);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += normal(engine) * kSizes[static_cast<size_t>(pick(engine))];
  std::memset(scratch, 0, sizeof scratch);
  scratch[n % 512] = std::pow(2.0, n) + std::exp(-sum) + std::fabs(std::log(1.0 + n)) + std::abs(-n);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double parsed = std::strtod("1.5", nullptr) + std::atoi("2") + static_cast<double>(std::strlen(kName));
  if (std::isnan(sum) || sum > std::numeric_limits<double>::max()) sum = 0;
  return sum + scratch[n % 512] + table[static_cast<size_t>(n) % table.size()] + calls + elapsed * 0 + parsed +
         std::stod(std::to_string(n)) + std::floor(2.5) + std::ceil(1.2) + std::round(std::cbrt(8.0));
}

}  // namespace dtrain

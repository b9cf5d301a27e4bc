// recorded.cpp: see recorded.h. The data file has one line per value:
//   <key> <rows> <cols> <v0> <v1> ...      (values in row-major order, %.17g)
#include "recorded.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace kit {

namespace {

std::string g_record_path;
int g_record_fd = -1;  // opened before the system-call filter, which refuses opening files

std::string key_of(const std::string& label) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name() + "/" + label + "/r" + std::to_string(rank());
}

const std::map<std::string, Matrix>& recorded() {
  static const std::map<std::string, Matrix> values = [] {
    std::map<std::string, Matrix> out;
#ifdef KIT_RECORDED_VALUES_INC
    static const char kText[] =
#include KIT_RECORDED_VALUES_INC
        ;
    std::istringstream in(kText);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string key;
      long rows = 0, cols = 0;
      if (!(fields >> key >> rows >> cols) || rows < 0 || cols < 0) continue;
      Matrix m(rows, cols);
      for (Eigen::Index i = 0; i < m.size(); ++i) fields >> m.data()[i];
      if (fields) out[key] = m;
    }
#endif
    return out;
  }();
  return values;
}

}  // namespace

void record_values_to(const std::string& path) {
  g_record_path = path;
  g_record_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

::testing::AssertionResult matches_recorded(const char*, const char* actual_expr, const std::string& label,
                                            const Matrix& actual) {
  const std::string key = key_of(label);
  if (!g_record_path.empty()) {
    std::ostringstream line;
    line.precision(17);
    line << key << ' ' << actual.rows() << ' ' << actual.cols();
    for (Eigen::Index i = 0; i < actual.size(); ++i) line << ' ' << actual.data()[i];
    line << '\n';
    const std::string text = line.str();
    const bool ok = g_record_fd >= 0 &&
                    ::write(g_record_fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    return ok ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << "cannot write " << g_record_path;
  }
  const auto& values = recorded();
  const auto it = values.find(key);
  if (it == values.end())
    return ::testing::AssertionFailure() << "no recorded value for " << key
                                         << " (staff: regenerate grader/hidden/expected.txt with make hidden-data)";
  return matrices_near(actual_expr, "the recorded value", actual, it->second);
}

}  // namespace kit

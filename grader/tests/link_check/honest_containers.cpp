// Honest code the link check must accept: the standard containers, strings,
// algorithms, lambdas and smart pointers.
//   python3 -m pytest grader/tests/test_link_check.py     (compiles and checks every file here)
#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "comm.h"

namespace dtrain {

double honest_containers(const std::vector<double>& values, const std::string& label) {
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end(), [](double a, double b) { return a > b; });
  std::stable_sort(sorted.begin(), sorted.end());
  std::vector<int> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::reverse(order.begin(), order.end());
  std::map<std::string, int> counts;
  std::unordered_map<int, double> by_index;
  std::set<int> seen;
  std::unordered_set<std::string> names;
  std::list<double> queue(values.begin(), values.end());
  std::deque<int> window;
  for (int i : order) {
    counts[label + std::to_string(i)] += 1;
    by_index.emplace(i, values[static_cast<size_t>(i)]);
    seen.insert(i % 7);
    names.insert(std::to_string(i % 3));
    window.push_back(i);
    if (window.size() > 4) window.pop_front();
  }
  queue.sort();
  auto shared = std::make_shared<std::vector<double>>(sorted);
  auto unique = std::make_unique<std::array<double, 4>>();
  std::function<double(double)> twice = [&](double x) { return 2 * x + static_cast<double>(unique->size()); };
  std::optional<double> best;
  if (!sorted.empty()) best = *std::max_element(sorted.begin(), sorted.end());
  std::ostringstream text;
  text << label << ": " << counts.size() << " " << by_index.size() << " " << seen.size() << " " << names.size();
  std::istringstream back(text.str());
  std::string word;
  back >> word;
  auto [low, high] = std::minmax_element(values.begin(), values.end());
  std::tuple<int, double> pair = {static_cast<int>(window.size()), queue.empty() ? 0.0 : queue.front()};
  const double total = std::accumulate(shared->begin(), shared->end(), 0.0);
  std::string joined;
  for (const auto& [key, count] : counts) joined += key.substr(0, 2) + ":" + std::to_string(count) + ",";
  if (joined.find("x") != std::string::npos) joined.erase(0, 1);
  return twice(total) + best.value_or(0.0) + static_cast<double>(word.size() + joined.size()) +
         (low == values.end() ? 0.0 : *low) + (high == values.end() ? 0.0 : *high) + std::get<1>(pair);
}

}  // namespace dtrain

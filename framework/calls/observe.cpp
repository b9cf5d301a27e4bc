// observe.cpp: see observe.h.
#include "observe.h"

#include <stdexcept>
#include <utility>
#include <vector>

namespace dtrain {

namespace {
ObservationSink g_sink = nullptr;
RuleSink g_rule_sink = nullptr;
}

RuleSink set_rule_sink(RuleSink sink) { return std::exchange(g_rule_sink, sink); }
bool under_test() { return g_rule_sink != nullptr; }

void rule_broken(const std::string& what) {
  if (g_rule_sink) return g_rule_sink(what);
  throw std::runtime_error(what);
}

void set_observation_sink(ObservationSink sink) { g_sink = sink; }
bool observing() { return g_sink != nullptr; }

void observe(const std::string& label, const Matrix& m) {
  if (g_sink) g_sink(label, static_cast<long>(m.rows()), static_cast<long>(m.cols()), m.data());
}

void observe(const std::string& label, const Vector& v) {
  if (g_sink) g_sink(label, 1, static_cast<long>(v.size()), v.data());
}

void observe(const std::string& label, const Labels& v) {
  if (!g_sink) return;
  std::vector<double> values(v.data(), v.data() + v.size());
  g_sink(label, 1, static_cast<long>(values.size()), values.data());
}

void observe(const std::string& label, std::initializer_list<double> values) {
  if (g_sink) g_sink(label, 1, static_cast<long>(values.size()), values.begin());
}

}  // namespace dtrain

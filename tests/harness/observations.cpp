// observations.cpp: see observations.h.
#include "observations.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "job.h"
#include "kit_facts.h"
#include "observe.h"
#include "records.h"
#include "zero_rules.h"

namespace harness {

namespace {

// A case that trains calls forward thousands of times; its first calls are
// the evidence, and they keep the records small. The runner reads no
// value record of more than kMaxElements values (kit/facts.py).
constexpr int kCallsPerLabel = 2;
constexpr long kMaxElements = dtrain::facts::kMaxValuesPerRecord;

std::string g_case;  // empty between cases: nothing is recorded there
std::map<std::string, int> g_seen;
constexpr int kRuleMessagesPerCase = 2;
int g_rules_broken = 0;

void sink(const std::string& label, long rows, long cols, const double* values) {
  if (g_case.empty()) return;
  const int n = ++g_seen[label];
  if (n > kCallsPerLabel) return;
  const long count = rows * cols;
  // A hidden case's recorded value is its check: the judge must see all of
  // it, never a sample, and the runner takes no record of more values.
  if (label.rfind("recorded.", 0) == 0 && count > kMaxElements) {
    ADD_FAILURE() << "staff: the recorded value " << label << " has " << count << " elements; the judge takes "
                  << kMaxElements << " at most a value: record it in pieces";
    return;
  }
  const long stride = count > kMaxElements ? (count + kMaxElements - 1) / kMaxElements : 1;
  std::vector<double> kept;
  kept.reserve(static_cast<size_t>(count / stride + 1));
  for (long i = 0; i < count; i += stride) kept.push_back(values[i]);
  write_record(records::value(g_case, job().rank, label + "#" + std::to_string(n), rows, cols, stride, kept));
}

}  // namespace

void install_sinks(bool with_values) {
  if (with_values) dtrain::set_observation_sink(sink);
  // A broken rule (ZeRO's memory and traffic, a request dropped unwaited)
  // fails the running case, said once per case however many calls break
  // it (a training case makes thousands).
  dtrain::set_rule_sink([](const std::string& what) {
    if (++g_rules_broken > kRuleMessagesPerCase) return;
    std::string text = what;
    if (g_rules_broken == kRuleMessagesPerCase) text += "\n(later calls of this case that break a rule of the kit are not listed)";
    // No file and line: the rule is the kit's, not a line of the test.
    ::testing::internal::AssertHelper(::testing::TestPartResult::kNonFatalFailure, nullptr, -1, text.c_str()) =
        ::testing::Message();
  });
}

void observations_begin(const std::string& case_name) {
  g_case = case_name;
  g_seen.clear();
  g_rules_broken = 0;
  dtrain::restart_call_numbers();
}

void observations_end() { g_case.clear(); }

}  // namespace harness

// case_plan.cpp: which cases a job runs, on which ranks, by the parts
// table (harness.h).
#include <fnmatch.h>

#include <algorithm>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "harness.h"

namespace harness {

namespace {

bool any_match(const std::string& patterns, const std::string& name) {
  std::stringstream list(patterns);
  std::string one;
  while (std::getline(list, one, ':'))
    if (!one.empty() && ::fnmatch(one.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

}  // namespace

bool selected_by_filter(const std::string& filter, const std::string& name) {
  const size_t dash = filter.find('-');
  std::string positive = filter.substr(0, dash);
  const std::string negative = dash == std::string::npos ? "" : filter.substr(dash + 1);
  if (positive.empty()) positive = "*";
  if (name.find("DISABLED_") != std::string::npos) return false;
  return any_match(positive, name) && !any_match(negative, name);
}

const TableRun* run_of(const std::string& case_name, const TableRun** also) {
  const TableRun* found = nullptr;
  for (const TableRun& run : kTableRuns) {
    if (!selected_by_filter(run.filter, case_name)) continue;
    if (found == nullptr) {
      found = &run;
    } else if (also != nullptr) {
      *also = &run;
      break;
    }
  }
  return found;
}

// Each case hands student code a fresh copy of the world communicator, so
// messages a broken case leaves unmatched can never be matched by a later case.
std::unique_ptr<dtrain::Communicator>& case_world() {
  static std::unique_ptr<dtrain::Communicator> current;
  return current;
}


CasePlan plan_cases(const std::string& filter, int rank) {
  CasePlan plan;
  const auto& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const auto* suite = unit.GetTestSuite(i);
    for (int j = 0; j < suite->total_test_count(); ++j) {
      const std::string name = std::string(suite->name()) + "." + suite->GetTestInfo(j)->name();
      if (!selected_by_filter(filter, name)) continue;
      const TableRun* second = nullptr;
      const TableRun* run = run_of(name, &second);
      if (run == nullptr) {
        plan.error = "no run of the parts table (kit/part_table.py) selects " + name;
        return plan;
      }
      if (second != nullptr) {
        plan.error = "two runs of the parts table (kit/part_table.py) select " + name + ": '" + run->filter + "' and '" +
                     second->filter + "'; make their filters name whole suites";
        return plan;
      }
      auto& names = plan.suites_by_ranks[run->ranks];
      if (std::find(names.begin(), names.end(), suite->name()) == names.end()) names.push_back(suite->name());
      if (rank < run->ranks) plan.mine += (plan.mine.empty() ? "" : ":") + name;
    }
  }
  if (plan.suites_by_ranks.empty()) plan.error = "no case matches --gtest_filter='" + filter + "'";
  return plan;
}

}  // namespace harness

// harness.h: internals shared by the test main and the kit_test.h helpers:
// the parts table's runs, the case plan, and the running case's world.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm.h"
#include "parts_table.h"  // generated from kit/part_table.py, kit/limits.py

namespace harness {

// The run of the parts table that selects this case ("Suite.Case"): how many
// ranks it runs on and how long it may take. Null if no run selects it; if
// more than one does, `also` (when given) is set to the second.
const TableRun* run_of(const std::string& case_name, const TableRun** also = nullptr);

// gtest's filter syntax (positive patterns, then '-' and negative ones),
// matched with fnmatch(3) like the runner's Python fnmatch.
bool selected_by_filter(const std::string& filter, const std::string& name);

// The cases a gtest filter selects, by the run of the parts table that
// selects each: a case of n ranks runs on ranks 0..n-1 of the job.
struct CasePlan {
  std::map<int, std::vector<std::string>> suites_by_ranks;  // rank count -> suites
  std::string mine;   // the cases this rank takes part in, as a gtest filter
  std::string error;  // set when no case is selected, or a run of the table is missing or ambiguous
};
CasePlan plan_cases(const std::string& filter, int rank);

// The communicator of the running case (null between cases).
std::unique_ptr<dtrain::Communicator>& case_world();

}  // namespace harness

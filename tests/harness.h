// harness.h: internals shared by the test main and the kit_test.h helpers.
#pragma once

#include <memory>
#include <string>

#include "comm.h"
#include "parts_table.h"  // generated from kit/parts.py

namespace harness {

// The run of the parts table that selects this case ("Suite.Case"): how many
// ranks it runs on and how long it may take. Null if no run selects it; if
// more than one does, `also` (when given) is set to the second.
const TableRun* run_of(const std::string& case_name, const TableRun** also = nullptr);

// gtest's filter syntax (positive patterns, then '-' and negative ones),
// matched with fnmatch(3) like the runner's Python fnmatch.
bool selected_by_filter(const std::string& filter, const std::string& name);

// The communicator of the running case (null between cases).
std::unique_ptr<dtrain::Communicator>& case_world();

}  // namespace harness

// harness.h: internals shared by the test main and the kit_test.h helpers.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "comm.h"

namespace harness {

struct SuiteSpec {
  int ranks = 1;
  double timeout_seconds = 5.0;
};

// Suite name -> spec, filled by KIT_SUITE before main runs.
std::map<std::string, SuiteSpec>& suites();

// The communicator of the running case (null between cases).
std::unique_ptr<dtrain::Communicator>& case_world();

}  // namespace harness

// observations.h: the harness's sink for framework/calls/observe.h: what student
// functions return goes to the runner as value records (records.h),
// for the judge outside this process.
#pragma once

#include <string>

namespace harness {

// with_values: a record channel takes them (the runner's jobs); a run by hand
// checks the rules all the same.
void install_sinks(bool with_values);
// Numbering starts again for each case: "forward#1" is a case's first forward.
void observations_begin(const std::string& case_name);
void observations_end();

}  // namespace harness

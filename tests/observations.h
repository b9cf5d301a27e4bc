// observations.h: the harness's sink for framework/observe.h: what student
// functions return goes to the results file as value records (records.h),
// for the judge outside this process.
#pragma once

#include <string>

namespace harness {

void install_observation_sink();
// Numbering starts again for each case: "forward#1" is a case's first forward.
void observations_begin(const std::string& case_name);
void observations_end();

}  // namespace harness

// job.h: this process's place in the test job, shared by the harness's
// files: its rank, the results file (tests/records.h) and the trace directory.
#pragma once

#include <string>

namespace harness {

struct Job {
  int rank = 0;              // in the job's world
  int results_fd = -1;       // --results=PATH, opened for appending; -1 when run bare (KIT_BARE=1)
  std::string results_path;
  std::string trace_dir;     // --trace-dir: where a case the watchdog ends leaves each rank's trace
  std::string syscall_filter = "off: not installed";  // "on", or "off: " and why (the plan record says it)
  double cpus = 0;           // --cpus: what the job may use at once (a container's quota); 0: the cores
};
Job& job();

// Appends one record. One record is one write() of one line, so records of
// different ranks never interleave inside a line (O_APPEND).
void write_record(const std::string& line);

}  // namespace harness

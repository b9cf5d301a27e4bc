// job.h: this process's place in the test job, shared by the harness's
// files: its rank, its record channel (tests/harness/records.h), the roll-call board
// and the trace directory.
#pragma once

#include <cstdint>
#include <string>

#include "records_format.h"  // the plan's codes of the system-call filter

namespace harness {

struct Job {
  int rank = 0;              // in the job's world
  int results_fd = -1;       // this rank's record channel, write-only; -1 when run bare (KIT_BARE=1)
  std::string results_dir;   // --results=DIR: the runner's channels and board
  std::string trace_dir;     // --trace-dir: where a case the watchdog ends leaves each rank's trace
  std::string syscall_filter = records::kFilterOffRefused;  // a code of kit/records.py's FILTER_STATES (the plan says it)
  double cpus = 0;           // --cpus: what the job may use at once (a container's quota); 0: the cores
  // The roll-call board (DIR/rollcall, mapped shared): slot r holds the tag
  // of the case rank r last answered a roll-call for (watchdog.cpp). Null
  // when run bare.
  std::uint32_t* board = nullptr;
};
Job& job();

// The records leave this process once. Each rank writes to a pipe of its
// own (DIR/rank<r>, a FIFO the runner made and reads as records arrive),
// opened write-only: no rank can read back, rewrite, truncate or reorder a
// record it wrote, nor write into another rank's channel, and the runner
// knows the rank of every record by the channel it came through.
// Returns "" or why the channel could not be opened.
std::string open_channel(const std::string& dir, int rank);

// Appends one record: one line, written whole (a mutex keeps the watchdog's
// thread and the case's from interleaving a record longer than a pipe's
// atomic write).
void write_record(const std::string& line);

// The board's slot count: ranks past it can't answer (no job has so many).
inline constexpr int kBoardSlots = 1024;

}  // namespace harness
